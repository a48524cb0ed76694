package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// TestExemplarQuerierOfAClosedDBFails: the exemplar querier goes through the
// DB's closed check, as the other queriers do: after Close it fails with
// kv.ErrClosed, and before, it reads what was written.
func TestExemplarQuerierOfAClosedDBFails(t *testing.T) {
	ctx := context.Background()
	b := schematest.Backends()[0]
	d := open(t, b.Store(t), b.Settings, write.Limits{})
	// Now: the exemplar table's TTL counts from each exemplar's timestamp.
	now := time.Now().UnixMilli()
	lbls := labels.FromStrings("__name__", "req_bucket", "host", "h")
	ex := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "t1"), Value: 1, Ts: now, HasTs: true}
	if res, err := d.Write(ctx, &write.Request{Series: []write.Series{{Labels: lbls,
		Samples: []cellenc.Sample{{T: now, V: 1}}, Exemplars: []exemplar.Exemplar{ex}}}}); err != nil || res.ExemplarsWritten != 1 {
		t.Fatalf("write: %+v, %v", res, err)
	}
	eq, err := d.ExemplarQuerier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := eq.Select(now-1000, now+1000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "req_bucket")})
	if err != nil || len(got) != 1 || len(got[0].Exemplars) != 1 {
		t.Fatalf("Select = %+v, %v; want the exemplar written", got, err)
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = d.ExemplarQuerier(ctx)
	if want := "db: exemplar querier: " + kv.ErrClosed.Error(); !errors.Is(err, kv.ErrClosed) || err.Error() != want {
		t.Errorf("ExemplarQuerier after Close = %v, want %s", err, want)
	}
	if _, qerr := d.Querier(now-1000, now+1000); !errors.Is(qerr, kv.ErrClosed) {
		t.Errorf("Querier after Close = %v, want kv.ErrClosed as ExemplarQuerier's", qerr)
	}
}
