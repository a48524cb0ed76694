package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"

	"github.com/hbtsdb/hbtsdb/schema"
)

// app is the parsed command line: the kingpin application, the flags every command
// shares, and the action of each command.
type app struct {
	kp       *kingpin.Application
	out      io.Writer // the command's standard output
	common   *commonFlags
	actions  map[string]func(context.Context, *slog.Logger) error
	exited   bool // --help or --version already answered
	exitCode int
}

func newApp(stdout, stderr io.Writer) *app {
	a := &app{
		kp: kingpin.New("tsdb", "hbtsdb: a Prometheus-compatible time-series store on Apache HBase.\n\n"+
			"Prometheus remote-writes to it and remote-reads from it; Grafana queries it with PromQL.\n"+
			"Without --storage it runs on an embedded store in ./data; with --storage=hbase:<zk quorum>\n"+
			"many tsdb processes share one HBase cluster. Every flag has an environment twin shown\n"+
			"in brackets, e.g. --storage is $TSDB_STORAGE."),
		actions: map[string]func(context.Context, *slog.Logger) error{},
		out:     stdout,
	}
	a.kp.UsageWriter(stdout).ErrorWriter(stderr)
	a.kp.Terminate(func(code int) { a.exited, a.exitCode = true, code })
	a.kp.HelpFlag.Short('h')
	// --version is answered by run before parsing (kingpin's own version flag
	// goes on parsing after it and prints the usage); registered here for --help.
	a.kp.Flag("version", "Print the version (as the version command does) and exit.").Bool()
	a.common = registerCommonFlags(a.kp)
	registerServe(a)
	registerSchema(a)
	registerCompact(a)
	registerDelete(a)
	registerImport(a, stderr)
	registerVersion(a)
	return a
}

// envName is the environment twin of a flag: --schema.salts is
// TSDB_SCHEMA_SALTS.
func envName(flag string) string {
	return "TSDB_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(flag))
}

// flagger registers flags with their environment twins on an app or a command.
type flagger interface {
	Flag(name, help string) *kingpin.FlagClause
}

func flag(on flagger, name, help string) *kingpin.FlagClause {
	return on.Flag(name, help).Envar(envName(name))
}

// durationValue is a kingpin value for Prometheus-style durations: 90s, 15m, 1h,
// 400d, 2y. Zero means "forever" where a flag says so.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration like 30s, 15m, 1h, 400d: %w", s, err)
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return model.Duration(*d).String() }

func durationFlag(c *kingpin.FlagClause, def string) *time.Duration {
	c.Default(def)
	v := new(time.Duration)
	c.SetValue((*durationValue)(v))
	return v
}

// enumValue is a kingpin value that takes one of a fixed set of words in any case
// (snappy, Snappy and SNAPPY alike, as the HBase shell does) and keeps the set's
// own spelling.
type enumValue struct {
	name    string
	value   *string
	allowed []string
}

func (e *enumValue) Set(s string) error {
	for _, a := range e.allowed {
		if strings.EqualFold(s, a) {
			*e.value = a
			return nil
		}
	}
	return fmt.Errorf("--%s: %q is not one of %s", e.name, s, strings.Join(e.allowed, ", "))
}

func (e *enumValue) String() string { return *e.value }

// enumFlag makes c a case-insensitive enumeration of allowed with default def.
func enumFlag(c *kingpin.FlagClause, def string, allowed ...string) *string {
	c.Default(def)
	v := new(string)
	c.SetValue(&enumValue{name: c.Model().Name, value: v, allowed: allowed})
	return v
}

// commonFlags are the flags every command shares: where the store is, the schema
// it must have, and logging.
type commonFlags struct {
	storage          *string
	hbaseTablePrefix *string
	hbaseZKTimeout   *time.Duration
	hbaseRPCTimeout  *time.Duration
	minFreeBytes     *units.Base2Bytes
	head             *bool
	headMaxBytes     *units.Base2Bytes

	bucketWidth  *time.Duration
	saltCount    *int
	oldSaltCount *int // --schema.salt-buckets, the old name of --schema.salts
	hostLabels   *string
	compression  *string
	rawRetention *time.Duration
	rollups      *string

	// exemplarRetention is --retention.exemplars, the exemplar table's TTL.
	exemplarRetention *time.Duration

	logLevel  *string
	logFormat *string
}

func registerCommonFlags(kp *kingpin.Application) *commonFlags {
	return &commonFlags{
		storage: flag(kp, "storage", "Where data lives: embedded:<dir> (a local directory, one process at a time) "+
			"or hbase:<zk quorum>[/<znode root>] (e.g. hbase:zk1:2181,zk2:2181/hbase).").
			Default("embedded:./data").String(),
		hbaseTablePrefix: flag(kp, "hbase.table-prefix", "Prefix of hbtsdb's table names in HBase's default namespace.").
			Default("tsdb-").String(),
		hbaseZKTimeout: durationFlag(flag(kp, "hbase.zookeeper-timeout", "ZooKeeper session timeout."), "30s"),
		minFreeBytes: flag(kp, "storage.min-free-bytes", "Free space an embedded store keeps on its disk: under it, writes are "+
			"answered 503 (Prometheus retries them) and /-/ready is false until space is freed, instead of the store stalling; "+
			"0 disables the check.").Default("256MiB").Bytes(),
		head: flag(kp, "storage.head", "Keep the embedded store's fresh raw samples in memory behind a write-ahead log of their own "+
			"(<dir>/head, fsynced before a write is answered, replayed at start) instead of one key per sample in its files, until "+
			"compaction rewrites their bucket. --no-storage.head writes what the log holds into the files at the next start.").
			Default("true").Bool(),
		headMaxBytes: flag(kp, "storage.head.max-bytes", "Memory the embedded store's head may take: above it, the rows logged longest "+
			"ago are written into the store's files. Its log on disk is bounded at four times this.").Default("512MiB").Bytes(),
		hbaseRPCTimeout: durationFlag(flag(kp, "hbase.rpc-timeout", "How long one HBase region call (lookup or read) may take "+
			"before it is retried elsewhere, and how long one write or point read may keep retrying an HBase "+
			"that does not answer before it fails with 503 (Prometheus retries it)."), "30s"),

		bucketWidth: durationFlag(flag(kp, "schema.bucket-width", "Time span of one data row. Fixed when the store is created."), "1h"),
		saltCount: flag(kp, "schema.salts", "Number of salts (pre-split regions) of the data table; "+
			"0 means 16 on HBase and 1 embedded. Fixed when the store is created.").Default("0").Int(),
		oldSaltCount: flag(kp, "schema.salt-buckets", "The old name of --schema.salts.").Hidden().Default("0").Int(),
		hostLabels: flag(kp, "schema.host-labels", "Comma-separated labels whose first present value is a series' host: "+
			"the host part of its row key (one host's series are stored together) and the host of /api/v1/last. "+
			"Fixed when the store is created.").Default(strings.Join(schema.DefaultHostLabels(), ",")).String(),
		compression: enumFlag(flag(kp, "schema.compression", "HBase compression of new tables: NONE, SNAPPY, GZ, LZ4 or ZSTD "+
			"(the codec must be installed on the region servers); any case, as in the HBase shell."), "NONE", "NONE", "SNAPPY", "GZ", "LZ4", "ZSTD"),
		rawRetention: durationFlag(flag(kp, "retention.raw", "How long raw samples are kept (HBase TTL of new tables); 0 keeps them forever."), "400d"),
		exemplarRetention: durationFlag(flag(kp, "retention.exemplars", "How long exemplars are kept: the TTL of the exemplar table, "+
			"fixed when it is created (the store records it and refuses another); 0 keeps them forever."), "30d"),
		rollups: flag(kp, "rollups", "Resolutions of downsampled data and how long each is kept: comma-separated "+
			"resolution:retention pairs in Prometheus' duration syntax (e.g. 5m:90d,1h:5y; retention 0 keeps one forever; "+
			"\"none\" for no rollups). A resolution is a whole number of minutes that divides 24h and divides the bucket width "+
			"or is a multiple of it; at most 8. Each resolution is a table (rollup-5m, rollup-1h, ...) whose TTL is its "+
			"retention. The store records the list: a resolution added gets its table at start, one removed is no longer "+
			"written (its table is kept until you drop it), and a retention cannot be changed here once its table exists "+
			"(the error gives the HBase shell commands that do).").Default(schema.DefaultRollupsString).String(),

		logLevel:  enumFlag(flag(kp, "log.level", "Log level."), "info", "debug", "info", "warn", "error"),
		logFormat: enumFlag(flag(kp, "log.format", "Log format."), "logfmt", "logfmt", "json"),
	}
}

func (c *commonFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log.level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if *c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// normalizeBoolFlags rewrites --flag=true and --flag=false of boolean flags into the
// --flag and --no-flag forms kingpin parses, so that both spellings work.
func (a *app) normalizeBoolFlags(args []string) []string {
	isBool := map[string]bool{}
	model := a.kp.Model()
	for _, f := range model.Flags {
		isBool[f.Name] = f.IsBoolFlag()
	}
	var walk func(cmds []*kingpin.CmdModel)
	walk = func(cmds []*kingpin.CmdModel) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				isBool[f.Name] = f.IsBoolFlag()
			}
			walk(c.Commands)
		}
	}
	walk(model.Commands)

	out := make([]string, 0, len(args))
	for _, arg := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if ok && strings.HasPrefix(arg, "--") && isBool[name] {
			if b, err := strconv.ParseBool(value); err == nil {
				if b {
					arg = "--" + name
				} else {
					arg = "--no-" + name
				}
			}
		}
		out = append(out, arg)
	}
	return out
}
