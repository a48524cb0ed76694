package backend

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Address{
		"embedded:./data":                    {Kind: Embedded, Dir: "./data"},
		"embedded:/var/lib/tsdb":             {Kind: Embedded, Dir: "/var/lib/tsdb"},
		"hbase:127.0.0.1:2181":               {Kind: HBase, Quorum: "127.0.0.1:2181", Root: "/hbase"},
		"hbase:zk1:2181,zk2:2181/hbase-prod": {Kind: HBase, Quorum: "zk1:2181,zk2:2181", Root: "/hbase-prod"},
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, wantErr := range map[string]string{
		"./data":      `unknown --storage "./data": use embedded:<dir>`,
		"cassandra:x": `unknown --storage "cassandra:x"`,
		"embedded:":   `--storage "embedded:" names no directory`,
		"hbase:":      `--storage "hbase:": hbase: empty address`,
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", in, err, wantErr)
		}
	}
}

func TestOpenEmbedded(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(context.Background(), Address{Kind: Embedded, Dir: dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if _, err := Open(context.Background(), Address{Kind: Embedded, Dir: dir}, Options{}); !errors.Is(err, embedded.ErrLocked) {
		t.Fatalf("second Open of %s = %v, want ErrLocked", dir, err)
	}
}

func TestOpenUnreachableHBaseIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Open(ctx, Address{Kind: HBase, Quorum: "127.0.0.1:1", Root: "/hbase"}, Options{})
	if !errors.Is(err, kv.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Open of an unreachable HBase = %v, want ErrUnavailable naming 127.0.0.1:1", err)
	}
}
