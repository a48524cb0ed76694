package hbase

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
)

// Defaults of Options. The gohbase ones are gohbase's own defaults, restated here so
// that an operator reading --help sees the real values.
const (
	DefaultZookeeperRoot       = "/hbase"
	DefaultTablePrefix         = "tsdb-"
	DefaultZookeeperTimeout    = 30 * time.Second
	DefaultRegionLookupTimeout = 30 * time.Second
	DefaultRegionReadTimeout   = 30 * time.Second
	DefaultFlushInterval       = time.Millisecond
	DefaultRPCQueueSize        = 100
	DefaultMaxBatchCalls       = 1000
	DefaultParallelRegionCalls = 16
	DefaultProbeTimeout        = 30 * time.Second
)

// Options configures a Store. The zero value of every field but Quorum means its
// default.
type Options struct {
	// Quorum is the ZooKeeper quorum HBase registers in: "host:port" or a
	// comma-separated list of them ("zk1:2181,zk2:2181"); a host without a port
	// gets 2181. ParseAddress splits it from a --storage address. Required.
	Quorum string
	// ZookeeperRoot is the znode under which HBase keeps its state
	// (zookeeper.znode.parent) [/hbase].
	ZookeeperRoot string
	// TablePrefix is prepended to every logical table name: the table "data" is the
	// HBase table "<prefix>data" in the default namespace (gohbase cannot use other
	// namespaces) [tsdb-]. ListTables reports only tables carrying the prefix, so
	// several stores (or test runs) can share one HBase. It cannot be empty;
	// ExactTableNames drops it.
	TablePrefix string
	// ExactTableNames makes every logical table name the HBase table's own name,
	// without TablePrefix, so that a store can read tables another program named,
	// such as OpenTSDB's "tsdb" and "tsdb-uid" (tsdb import opentsdb). ListTables
	// then reports every table of the default namespace. TablePrefix must be
	// empty with it.
	ExactTableNames bool
	// ZookeeperTimeout is the ZooKeeper session timeout [30s].
	ZookeeperTimeout time.Duration
	// RegionLookupTimeout bounds one lookup of a region in hbase:meta or of the
	// master in ZooKeeper, after which gohbase backs off and retries [30s].
	RegionLookupTimeout time.Duration
	// RegionReadTimeout is how long a region server may take to answer before its
	// connection is considered dead and the calls on it are retried elsewhere [30s].
	RegionReadTimeout time.Duration
	// FlushInterval is how long gohbase waits to fill a multi request before sending
	// it to a region server [1ms]. Every Apply waits for its last, partial multi
	// request; gohbase's own 20ms default cut batched-put throughput from 132k to
	// 38k cells/s in kvtest's BatchPut (10 rows of 100 cells per Apply).
	FlushInterval time.Duration
	// RPCQueueSize is how many calls gohbase puts in one multi request [100].
	RPCQueueSize int
	// MaxBatchCalls is the most calls Apply and GetRows hand to one gohbase SendBatch,
	// and the most rows of one Multi RPC of Apply's puts; larger batches are sent in
	// several [1000].
	MaxBatchCalls int
	// ParallelRegionCalls is how many Multi RPCs of one Apply's puts (one per region
	// the rows fall in, see regionPuts) are in flight at once [16]. HBase runs the
	// region actions of one RPC one after the other, each waiting for its WAL
	// sync, and those of several RPCs in parallel handlers.
	ParallelRegionCalls int
	// ProbeTimeout bounds Open's check that HBase answers when ctx has no deadline
	// [30s].
	ProbeTimeout time.Duration
	// CallTimeout bounds one Apply, Increment, CheckAndPut, Get, GetRows or Ping
	// whose context has no earlier deadline; past it the call fails with
	// kv.ErrUnavailable [the larger of RegionLookupTimeout and RegionReadTimeout].
	// gohbase retries a region it cannot locate or reach until the call's context
	// ends: without this bound a write to an HBase that is down (or whose
	// ZooKeeper is) would wait, holding its HTTP request, until HBase is back,
	// instead of being answered 503 for the sender to retry. Scans and schema
	// changes are not bounded by it: a scan runs as long as its reader wants,
	// a table creation as long as HBase's procedure takes.
	CallTimeout time.Duration
	// Logger receives the store's and gohbase's logs [slog.Default()].
	Logger *slog.Logger
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.ZookeeperRoot == "" {
		o.ZookeeperRoot = DefaultZookeeperRoot
	}
	if o.TablePrefix == "" && !o.ExactTableNames {
		o.TablePrefix = DefaultTablePrefix
	}
	if o.ZookeeperTimeout <= 0 {
		o.ZookeeperTimeout = DefaultZookeeperTimeout
	}
	if o.RegionLookupTimeout <= 0 {
		o.RegionLookupTimeout = DefaultRegionLookupTimeout
	}
	if o.RegionReadTimeout <= 0 {
		o.RegionReadTimeout = DefaultRegionReadTimeout
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.RPCQueueSize <= 0 {
		o.RPCQueueSize = DefaultRPCQueueSize
	}
	if o.MaxBatchCalls <= 0 {
		o.MaxBatchCalls = DefaultMaxBatchCalls
	}
	if o.ParallelRegionCalls <= 0 {
		o.ParallelRegionCalls = DefaultParallelRegionCalls
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = max(o.RegionLookupTimeout, o.RegionReadTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

func (o Options) validate() error {
	if _, _, err := ParseAddress(o.Quorum); err != nil {
		return err
	}
	if strings.Contains(o.Quorum, "/") {
		return fmt.Errorf("hbase: ZooKeeper quorum %q contains a znode root: put it in ZookeeperRoot (or use ParseAddress)", o.Quorum)
	}
	if !strings.HasPrefix(o.ZookeeperRoot, "/") {
		return fmt.Errorf("hbase: ZooKeeper root %q does not start with /", o.ZookeeperRoot)
	}
	if o.ExactTableNames && o.TablePrefix != "" {
		return fmt.Errorf("hbase: table prefix %q with ExactTableNames: give one or the other", o.TablePrefix)
	}
	for _, c := range o.TablePrefix {
		if !isTableNameChar(c) {
			return fmt.Errorf("hbase: table prefix %q: HBase table names allow only [A-Za-z0-9_.-]", o.TablePrefix)
		}
	}
	return nil
}

// isTableNameChar reports whether HBase allows c in a table qualifier
// (TableName.isLegalTableQualifierName).
func isTableNameChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// ParseAddress splits the address of `--storage hbase:<address>`, which is a
// ZooKeeper quorum optionally followed by the znode root HBase uses:
//
//	127.0.0.1:2181                 -> quorum "127.0.0.1:2181", root "/hbase"
//	zk1:2181,zk2:2181/hbase-prod   -> quorum "zk1:2181,zk2:2181", root "/hbase-prod"
//	zk1,zk2,zk3:2181/a/b           -> quorum "zk1,zk2,zk3:2181", root "/a/b"
//
// The root defaults to DefaultZookeeperRoot. Hosts without a port use ZooKeeper's
// 2181 (as the ZooKeeper client does); ports must be numbers in 1..65535, and an
// IPv6 address is written with brackets and a port ([::1]:2181).
func ParseAddress(addr string) (quorum, root string, err error) {
	if addr == "" {
		return "", "", fmt.Errorf("hbase: empty address: want <zk host:port>[,<host:port>...][/<znode root>]")
	}
	if strings.ContainsAny(addr, " \t\r\n") {
		return "", "", fmt.Errorf("hbase: address %q contains white space", addr)
	}
	quorum, root = addr, DefaultZookeeperRoot
	if i := strings.IndexByte(addr, '/'); i >= 0 {
		quorum, root = addr[:i], addr[i:]
		if strings.Trim(root, "/") == "" || strings.Contains(root, "//") || strings.HasSuffix(root, "/") {
			return "", "", fmt.Errorf("hbase: address %q: znode root %q is not a path like /hbase", addr, root)
		}
	}
	if quorum == "" {
		return "", "", fmt.Errorf("hbase: address %q has no ZooKeeper host", addr)
	}
	for _, hp := range strings.Split(quorum, ",") {
		if err := checkHostPort(hp); err != nil {
			return "", "", fmt.Errorf("hbase: address %q: %w", addr, err)
		}
	}
	return quorum, root, nil
}

// checkHostPort accepts "host", "host:port" and "[v6]:port".
func checkHostPort(hp string) error {
	if hp == "" {
		return fmt.Errorf("empty ZooKeeper host")
	}
	host, port := hp, ""
	switch {
	case strings.HasPrefix(hp, "[") || strings.Count(hp, ":") == 1:
		h, p, err := net.SplitHostPort(hp)
		if err != nil {
			return fmt.Errorf("ZooKeeper host %q: %v (an IPv6 address needs brackets and a port, as in [::1]:2181)", hp, err)
		}
		host, port = h, p
	case strings.Contains(hp, ":"):
		return fmt.Errorf("ZooKeeper host %q: an IPv6 address needs brackets and a port, as in [::1]:2181", hp)
	}
	if host == "" {
		return fmt.Errorf("ZooKeeper host %q has no host name", hp)
	}
	if port != "" || strings.HasSuffix(hp, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("ZooKeeper host %q: port %q is not a number in 1..65535", hp, port)
		}
	}
	return nil
}
