// Package backend opens the kv.Store a --storage address names: "embedded:<dir>"
// for the Pebble store in a local directory, "hbase:<zk quorum>[/<znode root>]" for
// Apache HBase. It is the one place that knows both backends, so that commands,
// benchmarks and tests open stores the same way.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/kv/hbase"
)

// Kind is a storage backend.
type Kind string

// The backends.
const (
	Embedded Kind = "embedded"
	HBase    Kind = "hbase"
)

// Address is a parsed --storage value.
type Address struct {
	Kind Kind
	// Dir is the embedded store's directory.
	Dir string
	// Quorum and Root locate HBase: the ZooKeeper quorum ("zk1:2181,zk2:2181") and
	// the znode root ("/hbase").
	Quorum, Root string
}

// Parse parses a --storage value.
func Parse(s string) (Address, error) {
	scheme, rest, ok := strings.Cut(s, ":")
	switch {
	case ok && scheme == string(Embedded):
		if rest == "" {
			return Address{}, fmt.Errorf("--storage %q names no directory: use embedded:<dir>, e.g. embedded:./data", s)
		}
		return Address{Kind: Embedded, Dir: rest}, nil
	case ok && scheme == string(HBase):
		quorum, root, err := hbase.ParseAddress(rest)
		if err != nil {
			return Address{}, fmt.Errorf("--storage %q: %w", s, err)
		}
		return Address{Kind: HBase, Quorum: quorum, Root: root}, nil
	}
	return Address{}, fmt.Errorf("unknown --storage %q: use embedded:<dir> (e.g. embedded:./data) or hbase:<zk quorum>[/<znode root>] (e.g. hbase:zk1:2181,zk2:2181/hbase)", s)
}

func (a Address) String() string {
	if a.Kind == Embedded {
		return "embedded:" + a.Dir
	}
	return "hbase:" + a.Quorum + a.Root
}

// Options are the settings of Open beyond the address.
type Options struct {
	// HBaseTablePrefix prefixes table names in HBase's default namespace [tsdb-].
	HBaseTablePrefix string
	// HBaseZooKeeperTimeout is the ZooKeeper session timeout [30s].
	HBaseZooKeeperTimeout time.Duration
	// HBaseRPCTimeout bounds one region lookup or read before gohbase retries
	// [30s], and so one whole call other than a scan (hbase.Options.CallTimeout
	// defaults to it): a write to an HBase that does not answer fails with
	// kv.ErrUnavailable after it.
	HBaseRPCTimeout time.Duration
	Logger          *slog.Logger
	// EmbeddedMinFreeBytes is the free space an embedded store keeps
	// (embedded.Options.MinFreeBytes; 0 disables the check here).
	EmbeddedMinFreeBytes int64
	// EmbeddedHeadHolds names the families an embedded store keeps in its head
	// (embedded.HeadOptions.Holds); nil keeps every cell in Pebble.
	EmbeddedHeadHolds func(table, family string) bool
	// EmbeddedHeadMaxBytes bounds the head's memory (embedded.HeadOptions.MaxBytes).
	EmbeddedHeadMaxBytes int64
	// MustExist refuses to create an embedded store: a directory that does not
	// exist is an error wrapping ErrNoStore (for commands that only look).
	MustExist bool
}

// ErrNoStore is returned by Open with MustExist for an embedded directory that
// does not exist.
var ErrNoStore = errors.New("no store")

// Open opens the store at addr. An unreachable HBase is an error wrapping
// kv.ErrUnavailable (so a server can wait and retry); a locked embedded
// directory is embedded.ErrLocked.
func Open(ctx context.Context, addr Address, opts Options) (kv.Store, error) {
	switch addr.Kind {
	case Embedded:
		dir, err := filepath.Abs(addr.Dir)
		if err != nil {
			return nil, fmt.Errorf("embedded store %s: %w", addr.Dir, err)
		}
		if opts.MustExist {
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("embedded store %s: the directory does not exist: %w", dir, ErrNoStore)
			}
		}
		minFree := opts.EmbeddedMinFreeBytes
		if minFree == 0 {
			minFree = -1 // off
		}
		return embedded.Open(ctx, dir, embedded.Options{Logger: opts.Logger, MinFreeBytes: minFree,
			Head: embedded.HeadOptions{Holds: opts.EmbeddedHeadHolds, MaxBytes: opts.EmbeddedHeadMaxBytes}})
	case HBase:
		return hbase.Open(ctx, hbase.Options{
			Quorum:              addr.Quorum,
			ZookeeperRoot:       addr.Root,
			TablePrefix:         opts.HBaseTablePrefix,
			ZookeeperTimeout:    opts.HBaseZooKeeperTimeout,
			RegionLookupTimeout: opts.HBaseRPCTimeout,
			RegionReadTimeout:   opts.HBaseRPCTimeout,
			Logger:              opts.Logger,
		})
	}
	return nil, fmt.Errorf("unknown storage kind %q", addr.Kind)
}
