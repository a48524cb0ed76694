package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
	"github.com/hbtsdb/hbtsdb/testing/opentsdbtest"
)

// TestImportOpenTSDB runs tsdb import opentsdb as a real process against a
// real OpenTSDB 2.4.1's tables: --dry-run counts and writes nothing; an
// import killed with SIGKILL once its checkpoint records a span, run again,
// says it resumes and leaves every point in the store once; a third run
// finds it done and writes nothing. The import is spelled both ways,
// tsdb import opentsdb hbase:<zk> and tsdb import --from-opentsdb hbase:<zk>.
func TestImportOpenTSDB(t *testing.T) {
	t.Setenv("OPENTSDB_EXTRA_CONF", "tsd.storage.enable_compaction = false")
	tsd := opentsdbtest.Start(t)
	zk := hbasetest.ZooKeeper(t)
	const series, n = 20, 1500
	base := time.Now().UTC().Truncate(time.Hour).Add(-6 * time.Hour).Unix()
	want := map[string]map[int64]float64{}
	type dp struct {
		Metric    string            `json:"metric"`
		Timestamp int64             `json:"timestamp"`
		Value     int64             `json:"value"`
		Tags      map[string]string `json:"tags"`
	}
	var batch []dp
	for i := range n { // every 7s: about three hours, so three or four rows a series
		for s := range series {
			host := "web-" + strconv.Itoa(s)
			batch = append(batch, dp{"cli.requests", base + int64(i)*7, int64(i * s), map[string]string{"host": host}})
			key := labels.FromStrings("__name__", "cli.requests", "host", host).String()
			if want[key] == nil {
				want[key] = map[int64]float64{}
			}
			want[key][(base+int64(i)*7)*1000] = float64(i * s)
		}
		if len(batch) >= 1000 || i == n-1 {
			b, err := json.Marshal(batch)
			if err != nil {
				t.Fatal(err)
			}
			tsd.Put(t, b)
			batch = batch[:0]
		}
	}

	prefix := hbasetest.UniquePrefix("imp")
	t.Cleanup(func() { hbasestore.DropPrefix(t, zk, prefix) })
	cp := filepath.Join(t.TempDir(), "cp.json")
	source := []string{"--opentsdb.data-table=" + tsd.TablePrefix + "tsdb", "--opentsdb.uid-table=" + tsd.TablePrefix + "tsdb-uid"}
	dest := []string{"--storage=hbase:" + zk, "--hbase.table-prefix=" + prefix, "--schema.salts=4", "--checkpoint=" + cp}

	code, out, stderr := tsdb(t, append(append([]string{"import", "opentsdb", "hbase:" + zk, "--dry-run"}, source...), dest...)...)
	if code != 0 || summaryField(t, out, "samples_read") != series*n || summaryField(t, out, "series") != series ||
		summaryField(t, out, "points_read") != series*n || summaryField(t, out, "columns_single") != series*n ||
		summaryField(t, out, "skipped_columns_corrupt") != 0 || summaryField(t, out, "skipped_rows_unknown_uid") != 0 {
		t.Fatalf("dry run exited %d:\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(cp); !os.IsNotExist(err) {
		t.Fatalf("a dry run made the checkpoint %s (%v)", cp, err)
	}

	args := append(append([]string{"import", "--from-opentsdb", "hbase:" + zk}, source...), dest...)
	args = append(args, "--batch-samples=600", "--concurrency=1", "--progress=log") // a row is 514 points
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TSDB_TEST_BE_TSDB=1")
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var st struct {
		Done     [][2]string `json:"done"`
		Complete bool        `json:"complete"`
	}
	for len(st.Done) == 0 {
		select {
		case err := <-exited:
			t.Fatalf("tsdb import exited (%v) before its checkpoint showed progress; log:\n%s", err, logs.String())
		case <-time.After(2 * time.Millisecond): // poll the checkpoint
		}
		if b, err := os.ReadFile(cp); err == nil {
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatalf("checkpoint %s: %v: %q", cp, err, b)
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	b, err := os.ReadFile(cp)
	if err != nil || json.Unmarshal(b, &st) != nil || st.Complete {
		t.Fatalf("the import finished before it was killed (checkpoint %s, %v): put more points", b, err)
	}
	t.Logf("killed with the checkpoint %s", b)

	code, out, stderr = tsdb(t, args...)
	if code != 0 {
		t.Fatalf("resumed import exited %d:\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "resuming from the checkpoint") {
		t.Fatalf("the resumed import does not say it resumes:\n%s", stderr)
	}
	if written := summaryField(t, out, "samples_written"); written == 0 || written >= series*n {
		t.Fatalf("the resumed import wrote %d samples, want some of the %d and not all:\n%s", written, series*n, out)
	}
	storedOnce(t, want, series*n)(readStoreOf(t, hbasestore.Open(t, zk, prefix)))
	runsAgainWritingNothing(t, args, "done already")
}

// TestImportOpenTSDBBadCommandLines: what is wrong is named, before anything
// is opened.
func TestImportOpenTSDBBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import"}, "tsdb import opentsdb: no OpenTSDB to import from: give its HBase, tsdb import opentsdb " +
			"hbase:<zk quorum> (or --from-opentsdb hbase:<zk quorum>); tsdb import openmetrics FILE and tsdb import " +
			"remote-read URL import files and remote-read sources"},
		{[]string{"import", "opentsdb", "embedded:./x"}, "tsdb import opentsdb: OpenTSDB keeps its tables in HBase: give " +
			"hbase:<zk quorum>[/<znode root>], not embedded:./x"},
		{[]string{"import", "opentsdb", "zk1:2181"}, "tsdb import opentsdb: OpenTSDB keeps its tables in HBase: give " +
			"hbase:<zk quorum>[/<znode root>], not zk1:2181"},
		{[]string{"import", "opentsdb", "hbase:zk1:99999"}, `tsdb import opentsdb: hbase: address "zk1:99999": ZooKeeper ` +
			`host "zk1:99999": port "99999" is not a number in 1..65535`},
		{[]string{"import", "opentsdb", "hbase:a", "--from-opentsdb=hbase:b"}, "tsdb import opentsdb: two OpenTSDB sources, " +
			"hbase:a and --from-opentsdb hbase:b: give one"},
		{[]string{"import", "opentsdb", "hbase:a", "--opentsdb.salt.width=9", "--opentsdb.uid.width.tagk=-1"},
			"tsdb import opentsdb: otsdbformat: salt width 9 is not in 0..8 (tsd.storage.salt.width)\n" +
				"otsdbformat: tagk UID width -1 is not in 1..8 (tsd.storage.uid.width.tagk)"},
		{[]string{"import", "opentsdb", "hbase:a", "--opentsdb.key-ranges=-1"},
			"tsdb import opentsdb: --opentsdb.key-ranges must not be negative (0 means the default), got -1"},
		{[]string{"import", "remote-read", "http://x/api/v1/read", "--match=up", "--start=0", "--from-opentsdb=hbase:a"},
			"tsdb import remote-read: --from-opentsdb imports OpenTSDB's tables: it does not go with tsdb import remote-read " +
				"(run tsdb import opentsdb hbase:a alone)"},
	} {
		code, _, stderr := tsdb(t, tc.args...)
		if code != 1 || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("tsdb %s: exit %d, stderr %q, want %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
