package hbase

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/zk"

	"github.com/hbtsdb/hbtsdb/kv"
)

// metaTable is HBase's catalog table; Open and Ping read from it to check that the
// region server holding it answers.
var metaTable = []byte("hbase:meta")

// Store is a kv.Store on Apache HBase. It is safe for concurrent use.
type Store struct {
	opts   Options
	log    *slog.Logger
	client gohbase.Client
	admin  gohbase.AdminClient
	// adminRPC is the admin client's SendRPC, for the calls the AdminClient
	// interface lacks (see createTable).
	adminRPC gohbase.RPCClient
	// rpc is the client's SendRPC, for the calls Client lacks (see regionPuts).
	rpc   gohbase.RPCClient
	conns *connTracker

	// gate: every operation runs between begin and its done function. Close sets
	// closed under the write lock, cancels closing (which cancels the operations'
	// contexts with cause kv.ErrClosed), then waits for inflight.
	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup
	closing  context.Context
	cancel   context.CancelFunc

	// regions is the admin and meta region of the gohbase clients, captured from the
	// calls of Open's probe, so that Close can stop gohbase's goroutines that retry
	// them (gohbase's admin client has no Close, and neither client stops looking
	// up these two regions on Close).
	regionsMu sync.Mutex
	regions   []hrpc.RegionInfo

	// bounds are the region boundaries Apply's puts have met (see regionPuts).
	bounds regionBounds

	// tombs counts the delete markers of Apply's calls that succeeded (Tombstones).
	tombs kv.TombstoneTotals
}

var _ kv.Store = (*Store)(nil)

// Open connects to the HBase whose ZooKeeper quorum opts names and checks that it
// answers: it reads the master's and hbase:meta's addresses from ZooKeeper, dials
// both, lists the tables through the master and reads from hbase:meta, all within
// ctx's deadline (or opts.ProbeTimeout when ctx has none). When HBase does not
// answer, Open fails with an error that wraps kv.ErrUnavailable and names the
// ZooKeeper address, and leaves no gohbase goroutine behind.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.ProbeTimeout)
		defer cancel()
	}
	start := time.Now()
	log := opts.Logger.With("zookeeper", opts.Quorum, "znode", opts.ZookeeperRoot)

	// Before gohbase sees the address: gohbase retries an unreachable ZooKeeper or
	// master forever, in goroutines that outlive a failed call and even Close.
	if err := probeZooKeeper(ctx, opts); err != nil {
		return nil, unavailable(opts, err)
	}

	closing, cancel := context.WithCancel(context.Background())
	s := &Store{
		opts:    opts,
		log:     opts.Logger,
		conns:   newConnTracker(),
		closing: closing,
		cancel:  cancel,
	}
	gopts := []gohbase.Option{
		gohbase.ZookeeperRoot(opts.ZookeeperRoot),
		gohbase.ZookeeperTimeout(opts.ZookeeperTimeout),
		gohbase.RegionLookupTimeout(opts.RegionLookupTimeout),
		gohbase.RegionReadTimeout(opts.RegionReadTimeout),
		gohbase.FlushInterval(opts.FlushInterval),
		gohbase.RpcQueueSize(opts.RPCQueueSize),
		gohbase.RegionDialer(s.conns.dial),
		gohbase.Logger(gohbaseLogger(opts.Logger)),
	}
	s.client = gohbase.NewClient(opts.Quorum, gopts...)
	s.admin = gohbase.NewAdminClient(opts.Quorum, gopts...)
	rpc, ok := s.admin.(gohbase.RPCClient)
	if !ok {
		s.shutdown()
		return nil, fmt.Errorf("hbase: gohbase's admin client %T does not implement SendRPC", s.admin)
	}
	s.adminRPC = rpc
	if s.rpc, ok = s.client.(gohbase.RPCClient); !ok {
		s.shutdown()
		return nil, fmt.Errorf("hbase: gohbase's client %T does not implement SendRPC", s.client)
	}

	if err := s.probe(ctx); err != nil {
		s.shutdown()
		return nil, unavailable(opts, err)
	}
	log.Info("hbase: store open", "table_prefix", opts.TablePrefix, "elapsed", time.Since(start).Round(time.Millisecond))
	return s, nil
}

// unavailable is Open's error for an HBase that does not answer.
func unavailable(opts Options, cause error) error {
	return &classifiedError{
		sentinel: kv.ErrUnavailable,
		msg: fmt.Sprintf("hbase: no HBase answers at ZooKeeper %s (znode %s): %v: is HBase running, and is --storage right?",
			opts.Quorum, opts.ZookeeperRoot, cause),
		err: cause,
	}
}

// probeZooKeeper reads where the master and hbase:meta are from ZooKeeper and dials
// both, within ctx.
func probeZooKeeper(ctx context.Context, opts Options) error {
	// The ZooKeeper client gives up on its request once a pass over the quorum
	// fails; dialing through ctx makes every pass fail as soon as ctx is done, so
	// the goroutine below ends shortly after ctx even if we stop waiting for it.
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		dctx, cancel := context.WithCancel(dctx)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		var d net.Dialer
		return d.DialContext(dctx, network, addr)
	}
	zc := zk.NewClient(opts.Quorum, opts.ZookeeperTimeout, dial, opts.Logger)
	for _, res := range []struct {
		name     string
		resource zk.ResourceName
	}{{"master", zk.Master}, {"hbase:meta region server", zk.Meta}} {
		type answer struct {
			addr string
			err  error
		}
		ch := make(chan answer, 1)
		go func() {
			defer func() {
				// gohbase's zk package panics on an empty znode.
				if p := recover(); p != nil {
					ch <- answer{err: fmt.Errorf("%v", p)}
				}
			}()
			addr, err := zc.LocateResource(res.resource.Prepend(opts.ZookeeperRoot))
			ch <- answer{addr, err}
		}()
		var a answer
		select {
		case a = <-ch:
		case <-ctx.Done():
			return fmt.Errorf("looking up the %s in ZooKeeper: %w", res.name, ctx.Err())
		}
		if a.err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("looking up the %s in ZooKeeper: %w (%v)", res.name, ctx.Err(), a.err)
			}
			return fmt.Errorf("looking up the %s in ZooKeeper: %w", res.name, a.err)
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", a.addr)
		if err != nil {
			return fmt.Errorf("ZooKeeper names %s as the %s, which does not answer: %w", a.addr, res.name, err)
		}
		conn.Close()
	}
	return nil
}

// probe asks the master for the table list and reads a row of hbase:meta. It keeps
// the admin and meta region of the clients for Close.
func (s *Store) probe(ctx context.Context) error {
	list, err := hrpc.NewListTableNames(ctx)
	if err != nil {
		return err
	}
	_, err = s.admin.ListTableNames(list)
	s.keepRegion(list.Region())
	if err != nil {
		return fmt.Errorf("listing tables through the master: %w", err)
	}
	get, err := hrpc.NewGet(ctx, metaTable, []byte("hbtsdb-probe,,"))
	if err != nil {
		return err
	}
	_, err = s.client.Get(get)
	s.keepRegion(get.Region())
	if err != nil {
		return fmt.Errorf("reading hbase:meta: %w", err)
	}
	return nil
}

func (s *Store) keepRegion(r hrpc.RegionInfo) {
	if r == nil {
		return
	}
	s.regionsMu.Lock()
	defer s.regionsMu.Unlock()
	for _, have := range s.regions {
		if have == r {
			return
		}
	}
	s.regions = append(s.regions, r)
}

// begin admits an operation: it fails with ErrClosed after Close, and otherwise
// returns ctx extended to be cancelled (with cause kv.ErrClosed) when the store
// closes, and a done function the operation must call when it returns.
func (s *Store) begin(ctx context.Context) (context.Context, func(), error) {
	if err := s.enter(); err != nil {
		return nil, nil, err
	}
	octx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.closing, func() { cancel(kv.ErrClosed) })
	return octx, func() {
		stop()
		cancel(nil)
		s.inflight.Done()
	}, nil
}

// beginCall is begin for a call that must end on its own, whatever HBase does:
// unless ctx ends sooner, the call's context expires after Options.CallTimeout
// (gohbase retries a region it cannot locate or reach until then), and classify
// turns the expiry into kv.ErrUnavailable, which a writer answers with 503.
func (s *Store) beginCall(ctx context.Context) (context.Context, func(), error) {
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= s.opts.CallTimeout {
		return ctx, done, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	return ctx, func() {
		cancel()
		done()
	}, nil
}

// enter counts an operation in flight, or fails with ErrClosed after Close; the
// operation calls s.inflight.Done when it returns.
func (s *Store) enter() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("hbase: %w", kv.ErrClosed)
	}
	s.inflight.Add(1)
	return nil
}

// Ping reads from hbase:meta, within ctx: the region server that holds it answers
// (found through ZooKeeper), as every read and write needs it to find its regions.
// It does not ask the master: reads and writes go on without one (a cluster test
// kills it under load), and a readiness probe that failed while the master
// restarts would take every tsdb process out of service for nothing.
func (s *Store) Ping(ctx context.Context) error {
	ctx, done, err := s.beginCall(ctx)
	if err != nil {
		return err
	}
	defer done()
	get, err := hrpc.NewGet(ctx, metaTable, []byte("hbtsdb-probe,,"))
	if err != nil {
		return fmt.Errorf("hbase: ping: %w", err)
	}
	if _, err := s.client.Get(get); err != nil {
		return fmt.Errorf("hbase: ping hbase:meta: %w", classify(ctx, err))
	}
	return nil
}

// Close cancels the operations in flight, waits for them to return, and closes the
// gohbase clients and their connections. It is safe to call more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.inflight.Wait()
	s.shutdown()
	s.log.Info("hbase: store closed", "zookeeper", s.opts.Quorum)
	return nil
}

// shutdown closes the gohbase clients. gohbase's admin client has no Close (and its
// client.Close would close a nil channel): its master connection is closed through
// the admin region, which is also marked dead, like hbase:meta's, so that gohbase
// stops any lookup of them it is still retrying.
func (s *Store) shutdown() {
	if s.cancel != nil {
		s.cancel()
	}
	if s.client != nil {
		s.client.Close()
	}
	s.regionsMu.Lock()
	regions := s.regions
	s.regions = nil
	s.regionsMu.Unlock()
	for _, r := range regions {
		r.MarkDead()
		if rc := r.Client(); rc != nil {
			rc.Close()
		}
	}
	s.conns.closeAll()
}

// connTracker dials gohbase's region server connections and closes those still open
// at Close: a last resort for a connection no gohbase Close reaches.
//
// It hands gohbase the *net.TCPConn itself, never a wrapper. gohbase writes a
// request with cell blocks as net.Buffers, and it writes from more than one
// goroutine on the same connection (its batching writer, and callers sending
// unbatched calls such as scans directly). On a *net.TCPConn, net.Buffers.WriteTo
// is one writev under the socket's write lock; on any other net.Conn it falls back
// to one Write per buffer, which another goroutine's request can interleave. HBase
// then reads a frame of garbage (here: "RPC data length of 4267562504", "Invalid key
// length in KeyValue") and its region server died with SIGSEGV copying past a
// buffer. So connections are tracked by identity, and closed ones are forgotten at
// the next dial.
type connTracker struct {
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

func newConnTracker() *connTracker {
	return &connTracker{conns: make(map[net.Conn]struct{})}
}

var errStoreClosed = errors.New("hbase store closed")

func (t *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, errStoreClosed
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return nil, errStoreClosed
	}
	for old := range t.conns {
		if isClosed(old) {
			delete(t.conns, old)
		}
	}
	t.conns[c] = struct{}{}
	return c, nil
}

// isClosed reports whether c was closed (by gohbase, which does not tell us).
func isClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	return raw.Control(func(uintptr) {}) != nil
}

func (t *connTracker) closeAll() {
	t.mu.Lock()
	t.closed = true
	conns := t.conns
	t.conns = map[net.Conn]struct{}{}
	t.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}
