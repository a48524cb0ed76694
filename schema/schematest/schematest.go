// Package schematest gives tests of the packages above kv (index, write,
// query, db) stores with hbtsdb's schema created, on every backend: the embedded
// store and the real HBase of testing/hbasetest (skipped, or failed under
// TSDB_TEST_REQUIRE_HBASE=1, when there is none). Tests never run against a mock.
//
// It is a test helper: it imports the storage backends, which nothing above
// kv may do in production code.
package schematest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// Backend is one kv.Store implementation to run a test on.
type Backend struct {
	// Name is "embedded" or "hbase", for t.Run.
	Name string
	// Settings are the schema settings the backend's stores are created with: the
	// defaults of the backend, except 4 salts on HBase so that tests create
	// tables quickly while still spreading hosts over salts.
	Settings schema.Settings
	// TableOptions are the options of the tables Store creates: the defaults
	// (raw retention 400 days), salts as in Settings. Tests that write
	// samples near the epoch (as Prometheus' promqltest does) set RawRetention
	// to 0, or the family's TTL hides them at once.
	TableOptions schema.TableOptions
	// newStores opens n handles on one fresh store; see Stores.
	newStores func(t testing.TB, n int) []kv.Store
}

// Backends are the embedded store and the test HBase.
func Backends() []Backend {
	hb := schema.DefaultHBaseSettings()
	hb.Salts = 4
	backends := []Backend{
		{Name: "embedded", Settings: schema.DefaultEmbeddedSettings(), newStores: embeddedStores},
		{Name: "hbase", Settings: hb, newStores: hbaseStores},
	}
	for i := range backends {
		backends[i].TableOptions = schema.DefaultTableOptions()
		backends[i].TableOptions.Salts = backends[i].Settings.Salts
	}
	return backends
}

// Available reports whether the backend can run here: the embedded store always
// can, HBase when testing/hbasetest knows where it is. A test that needs an
// unavailable backend skips (or fails, where HBase is required) in Store.
func (b Backend) Available() bool {
	return b.Name != "hbase" || os.Getenv(hbasetest.EnvZooKeeper) != ""
}

// Store returns a fresh store with the schema created with b.Settings. It is
// closed and removed when the test ends.
func (b Backend) Store(t testing.TB) kv.Store {
	t.Helper()
	return b.Stores(t, 1)[0]
}

// Stores returns n handles on one fresh store with the schema created: on the
// embedded store (one process per directory) the same handle n times, on HBase n
// separate connections, as n tsdb processes would have. Closing one handle does not
// affect the others' cleanup.
func (b Backend) Stores(t testing.TB, n int) []kv.Store {
	t.Helper()
	sts := b.newStores(t, n)
	CreateWith(t, sts[0], b.Settings, b.TableOptions)
	return sts
}

// Create creates the schema with settings on st (raw retention 400 days).
func Create(t testing.TB, st kv.Store, settings schema.Settings) {
	t.Helper()
	opts := schema.DefaultTableOptions()
	opts.Salts = settings.Salts
	CreateWith(t, st, settings, opts)
}

// CreateWith creates the schema with settings and table options on st.
func CreateWith(t testing.TB, st kv.Store, settings schema.Settings, opts schema.TableOptions) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := provision.Create(ctx, st, settings, opts); err != nil {
		t.Fatalf("create the schema: %v", err)
	}
}

func embeddedStores(t testing.TB, n int) []kv.Store {
	t.Helper()
	// As tsdb serve opens it: fresh raw samples and pending marks in the head.
	st, err := embedded.Open(context.Background(), t.TempDir(), embedded.Options{SweepInterval: -1,
		Head: embedded.HeadOptions{Holds: schema.Transient}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sts := make([]kv.Store, n)
	for i := range sts {
		sts[i] = st
	}
	return sts
}

func hbaseStores(t testing.TB, n int) []kv.Store {
	t.Helper()
	zk := hbasetest.ZooKeeper(t)
	prefix := hbasetest.UniquePrefix("t")
	sts := make([]kv.Store, n)
	for i := range sts {
		st := hbasestore.Open(t, zk, prefix)
		sts[i] = st
	}
	t.Cleanup(func() {
		for _, st := range sts {
			st.Close()
		}
		hbasestore.DropPrefix(t, zk, prefix)
	})
	return sts
}

// CountingStore is a real store that counts the cells put through Apply and
// the check-and-puts that were applied, per table and family, so that tests
// can tell what a step wrote. Everything is
// stored: it observes, it does not fake.
type CountingStore struct {
	kv.Store
	mu   sync.Mutex
	puts map[string]int // "table/family" -> cells put
}

// Counting wraps st.
func Counting(st kv.Store) *CountingStore {
	return &CountingStore{Store: st, puts: map[string]int{}}
}

// Apply counts the puts of a batch the store accepted.
func (c *CountingStore) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	if err := c.Store.Apply(ctx, table, muts); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range muts {
		if m.Kind == kv.KindPut {
			c.puts[table+"/"+m.Family]++
		}
	}
	return nil
}

// CheckAndPut counts the put if it was applied.
func (c *CountingStore) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	won, err := c.Store.CheckAndPut(ctx, table, expected, put)
	if won {
		c.mu.Lock()
		c.puts[table+"/"+put.Family]++
		c.mu.Unlock()
	}
	return won, err
}

// Puts returns the cells put into table/family so far and resets the count.
func (c *CountingStore) Puts(table, family string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.puts[table+"/"+family]
	delete(c.puts, table+"/"+family)
	return n
}
