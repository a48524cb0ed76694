package otsdbimport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/otsdbformat"
)

// uids is the UID table's names: UID bytes -> name, per kind.
type uids struct {
	metrics, tagk, tagv map[string]string
}

// metricUIDs is every metric UID, sorted.
func (u *uids) metricUIDs() [][]byte {
	out := make([][]byte, 0, len(u.metrics))
	for id := range u.metrics {
		out = append(out, []byte(id))
	}
	slices.SortFunc(out, bytes.Compare)
	return out
}

// loadUIDs reads every name of the UID table (family name). A UID whose width
// is not the layout's for its kind is an error: the installation's
// tsd.storage.uid.width settings are other than those given.
func loadUIDs(ctx context.Context, src Source) (*uids, error) {
	l := src.Layout.WithDefaults()
	u := &uids{metrics: map[string]string{}, tagk: map[string]string{}, tagv: map[string]string{}}
	kinds := []struct {
		qualifier, flag string
		width           int
		names           map[string]string
	}{
		{otsdbformat.KindMetric, "--opentsdb.uid.width.metric", l.MetricWidth, u.metrics},
		{otsdbformat.KindTagk, "--opentsdb.uid.width.tagk", l.TagkWidth, u.tagk},
		{otsdbformat.KindTagv, "--opentsdb.uid.width.tagv", l.TagvWidth, u.tagv},
	}
	sc := src.Store.Scan(ctx, src.UIDTable, nil, nil, kv.Families(otsdbformat.FamilyName))
	defer sc.Close()
	for sc.Next() {
		row := sc.Row()
		for _, c := range row.Cells {
			for _, k := range kinds {
				if string(c.Qualifier) != k.qualifier {
					continue
				}
				if len(row.Key) != k.width {
					return nil, fmt.Errorf("otsdbimport: the UID table %s names %s UID %x (%q), of %d bytes where %s is %d: "+
						"give the tsd.storage.uid.width settings of the OpenTSDB that wrote it", src.UIDTable, k.qualifier,
						row.Key, otsdbformat.Name(c.Value), len(row.Key), k.flag, k.width)
				}
				k.names[string(row.Key)] = otsdbformat.Name(c.Value)
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, kv.ErrTableNotFound) {
			return nil, fmt.Errorf("otsdbimport: OpenTSDB's UID table %s is not on this HBase (%w): give its name "+
				"(tsd.storage.hbase.uid_table) with --opentsdb.uid-table", src.UIDTable, err)
		}
		return nil, fmt.Errorf("otsdbimport: read the UID table %s: %w", src.UIDTable, err)
	}
	return u, nil
}
