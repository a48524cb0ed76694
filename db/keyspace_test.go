package db_test

import (
	"bytes"
	"context"

	"github.com/hbtsdb/hbtsdb/kv"
)

// keyspace is a real store seen through a row-key prefix: every row it writes
// and reads is prefix + row, and rows come back without the prefix. Several
// keyspaces on one set of tables are independent stores, which lets the HBase
// half of the PromQL suite make a fresh storage per test file and `clear` in
// milliseconds instead of creating five tables each time. Everything still goes
// through the real backend: filters, time ranges, versions, TTL and batching
// are the backend's own; only the salt's pre-split regions are not exercised.
type keyspace struct {
	kv.Store
	prefix []byte
}

func (k *keyspace) key(row []byte) []byte {
	return append(append(make([]byte, 0, len(k.prefix)+len(row)), k.prefix...), row...)
}

func (k *keyspace) strip(r kv.Row) kv.Row {
	r.Key = bytes.TrimPrefix(r.Key, k.prefix)
	return r
}

func (k *keyspace) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	out := make([]kv.Mutation, len(muts))
	for i, m := range muts {
		m.Row = k.key(m.Row)
		out[i] = m
	}
	return k.Store.Apply(ctx, table, out)
}

func (k *keyspace) Get(ctx context.Context, table string, row []byte, opts ...kv.ReadOption) (kv.Row, error) {
	r, err := k.Store.Get(ctx, table, k.key(row), opts...)
	return k.strip(r), err
}

func (k *keyspace) GetRows(ctx context.Context, table string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	keys := make([][]byte, len(rows))
	for i, r := range rows {
		keys[i] = k.key(r)
	}
	out, err := k.Store.GetRows(ctx, table, keys, opts...)
	for i := range out {
		out[i] = k.strip(out[i])
	}
	return out, err
}

func (k *keyspace) Scan(ctx context.Context, table string, start, stop []byte, opts ...kv.ReadOption) kv.Scanner {
	s := k.key(start)
	e := kv.PrefixEnd(k.prefix)
	if stop != nil {
		e = k.key(stop)
	}
	return &keyspaceScanner{Scanner: k.Store.Scan(ctx, table, s, e, opts...), k: k}
}

func (k *keyspace) Increment(ctx context.Context, table string, row []byte, family string, qualifier []byte, delta int64) (int64, error) {
	return k.Store.Increment(ctx, table, k.key(row), family, qualifier, delta)
}

func (k *keyspace) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	put.Row = k.key(put.Row)
	return k.Store.CheckAndPut(ctx, table, expected, put)
}

// Close leaves the shared store open: its test closes it.
func (k *keyspace) Close() error { return nil }

type keyspaceScanner struct {
	kv.Scanner
	k *keyspace
}

func (s *keyspaceScanner) Row() kv.Row { return s.k.strip(s.Scanner.Row()) }
