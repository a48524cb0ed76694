package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hbtsdb/hbtsdb/importer"
	"github.com/hbtsdb/hbtsdb/kv/backend"
	"github.com/hbtsdb/hbtsdb/kv/hbase"
	"github.com/hbtsdb/hbtsdb/otsdbformat"
	"github.com/hbtsdb/hbtsdb/otsdbimport"
)

// opentsdbOptions are tsdb import opentsdb's settings.
type opentsdbOptions struct {
	source    string // the argument
	fromFlag  string // --from-opentsdb, the spelling
	dataTable string
	uidTable  string
	layout    otsdbformat.Layout
	keyRanges int
	stats     *otsdbimport.Stats
	// common gives the HBase timeouts (--hbase.zookeeper-timeout,
	// --hbase.rpc-timeout), used for OpenTSDB's HBase too.
	common *commonFlags
}

// registerImportOpenTSDB adds tsdb import opentsdb (also spelled tsdb import
// --from-opentsdb hbase:<zk>) to cmd, the import command.
func registerImportOpenTSDB(a *app, cmd *kingpin.CmdClause, o *importOptions, stderr io.Writer) {
	ot := &o.opentsdb
	ot.common = a.common
	flag(cmd, "from-opentsdb", "Import OpenTSDB's tables from this HBase: tsdb import --from-opentsdb hbase:<zk> is "+
		"tsdb import opentsdb hbase:<zk>.").PlaceHolder("hbase:<zk>").StringVar(&ot.fromFlag)
	oc := cmd.Command("opentsdb", "Import an OpenTSDB 2.x installation's history by reading its own HBase tables "+
		"directly (tsdb-uid for the names, tsdb for the data points: single cells in seconds and milliseconds, "+
		"compacted columns, appended data points, salted or not): every series becomes the series /api/put stores for "+
		"the same datapoint (the metric as __name__, each tag a label, names as OpenTSDB has them), its integers as "+
		"float64. Annotations, histograms and columns that do not decode are skipped and counted. The table is read in "+
		"key ranges (per salt bucket, cut at metric UIDs), --concurrency at once; the checkpoint records the key spans "+
		"stored. OpenTSDB may keep running meanwhile; run the import again (without the checkpoint) to bring over what "+
		"it wrote since, onto the same cells.\n\n"+
		"Examples:\n"+
		"  tsdb import opentsdb hbase:zk1,zk2,zk3 --storage=hbase:zk1,zk2,zk3\n"+
		"  tsdb import --from-opentsdb hbase:zk1:2181/hbase --storage=hbase:zk1:2181/hbase\n"+
		"  tsdb import opentsdb hbase:zk1 --opentsdb.salt.width=1 --opentsdb.salt.buckets=20 --dry-run\n\n"+
		"The summary adds what was read of OpenTSDB's tables: rows_read, points_read, columns_single, "+
		"columns_compacted, columns_appended, and what was skipped: skipped_columns_annotation, "+
		"skipped_columns_histogram, skipped_columns_other, skipped_columns_corrupt, skipped_duplicate_points, "+
		"skipped_rows_unknown_uid, skipped_points_unknown_uid, skipped_rows_bad_key, skipped_rows_global_annotation.")
	// The default subcommand of import, so that tsdb import --from-opentsdb
	// hbase:<zk> (no subcommand) is this one.
	oc.Default()
	oc.Arg("source", "OpenTSDB's HBase: hbase:<zk quorum>[/<znode root>] (tsd.storage.hbase.zk_quorum and zk_basedir).").
		StringVar(&ot.source)
	b := o.flagsOn(oc)
	ot.dataTable, ot.uidTable = otsdbimport.DefaultDataTable, otsdbimport.DefaultUIDTable
	b.flag("opentsdb.data-table", "", "OpenTSDB's data table (tsd.storage.hbase.data_table).").
		Default(ot.dataTable).StringVar(&ot.dataTable)
	b.flag("opentsdb.uid-table", "", "OpenTSDB's UID table (tsd.storage.hbase.uid_table).").
		Default(ot.uidTable).StringVar(&ot.uidTable)
	ot.layout = otsdbformat.Layout{}.WithDefaults()
	b.int("opentsdb.salt.width", "", "Bytes of salt at the start of OpenTSDB's row keys (tsd.storage.salt.width); 0: not salted.",
		&ot.layout.SaltWidth)
	b.int("opentsdb.salt.buckets", "", "OpenTSDB's salt buckets (tsd.storage.salt.buckets), with a salt width.",
		&ot.layout.SaltBuckets)
	b.int("opentsdb.uid.width.metric", "", "Bytes of a metric UID (tsd.storage.uid.width.metric).", &ot.layout.MetricWidth)
	b.int("opentsdb.uid.width.tagk", "", "Bytes of a tag key UID (tsd.storage.uid.width.tagk).", &ot.layout.TagkWidth)
	b.int("opentsdb.uid.width.tagv", "", "Bytes of a tag value UID (tsd.storage.uid.width.tagv).", &ot.layout.TagvWidth)
	b.int("opentsdb.key-ranges", "otsdbimport: Options.KeyRanges", fmt.Sprintf("About how many key ranges the data "+
		"table is cut into, the units of parallel work; 0: %d × --concurrency.", otsdbimport.DefaultRangesPerWorker),
		&ot.keyRanges)
	a.actions[oc.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		return runImport(ctx, a.out, stderr, a.common, o, logger, importOpenTSDB)
	}
}

// importOpenTSDB is tsdb import opentsdb.
func importOpenTSDB(o *importOptions, logger *slog.Logger) (func(context.Context, importer.Options) error, error) {
	ot := &o.opentsdb
	src := ot.source
	switch {
	case src == "" && ot.fromFlag == "":
		return nil, errors.New("no OpenTSDB to import from: give its HBase, tsdb import opentsdb hbase:<zk quorum> " +
			"(or --from-opentsdb hbase:<zk quorum>); tsdb import openmetrics FILE and tsdb import remote-read URL import " +
			"files and remote-read sources")
	case src == "":
		src = ot.fromFlag
	case ot.fromFlag != "" && ot.fromFlag != src:
		return nil, fmt.Errorf("two OpenTSDB sources, %s and --from-opentsdb %s: give one", src, ot.fromFlag)
	}
	rest, ok := strings.CutPrefix(src, "hbase:")
	if !ok {
		return nil, fmt.Errorf("OpenTSDB keeps its tables in HBase: give hbase:<zk quorum>[/<znode root>], not %s", src)
	}
	quorum, root, err := hbase.ParseAddress(rest)
	if err != nil {
		return nil, err
	}
	addr := backend.Address{Kind: backend.HBase, Quorum: quorum, Root: root}
	if err := errors.Join(ot.layout.Validate(), o.flags.explain(otsdbimport.Options{KeyRanges: ot.keyRanges}.Validate())); err != nil {
		return nil, err
	}
	source := otsdbimport.Source{DataTable: ot.dataTable, UIDTable: ot.uidTable, Layout: ot.layout}
	job := source.Job(addr.String())
	path := o.checkpoint
	if path == "" {
		h := fnv.New32a()
		_, _ = h.Write([]byte(job))
		path = fmt.Sprintf("tsdb-import-opentsdb-%08x.json", h.Sum32())
	}
	cp, err := otsdbimport.OpenCheckpoint(path, job)
	if err != nil {
		return nil, err
	}
	ot.stats = &otsdbimport.Stats{}
	o.summary = ot.printSummary
	return func(ctx context.Context, opts importer.Options) error {
		st, err := hbase.Open(ctx, hbase.Options{Quorum: addr.Quorum, ZookeeperRoot: addr.Root, ExactTableNames: true,
			ZookeeperTimeout: *ot.common.hbaseZKTimeout, RegionLookupTimeout: *ot.common.hbaseRPCTimeout,
			RegionReadTimeout: *ot.common.hbaseRPCTimeout, Logger: logger})
		if err != nil {
			return fmt.Errorf("OpenTSDB's HBase %s (the source to import from): %w", addr, err)
		}
		defer st.Close()
		source.Store = st
		run := otsdbimport.Options{Import: opts, Stats: ot.stats, KeyRanges: ot.keyRanges}
		if !o.dryRun {
			run.Checkpoint = cp
		}
		logger.Info("importing from OpenTSDB", "hbase", addr.String(), "data_table", ot.dataTable, "uid_table", ot.uidTable,
			"layout", ot.layout.String(), "checkpoint", path, "dry_run", o.dryRun)
		return otsdbimport.Import(ctx, source, run)
	}, nil
}

// printSummary writes the OpenTSDB lines of the summary.
func (ot *opentsdbOptions) printSummary(w io.Writer) {
	s := ot.stats
	line := func(name string, v int64) { fmt.Fprintf(w, "%s: %d\n", name, v) }
	line("rows_read", s.Rows.Load())
	line("points_read", s.Points.Load())
	for _, k := range []otsdbformat.Kind{otsdbformat.KindSingle, otsdbformat.KindCompacted, otsdbformat.KindAppended} {
		line("columns_"+k.String(), s.Columns[k].Load())
	}
	for _, k := range []otsdbformat.Kind{otsdbformat.KindAnnotation, otsdbformat.KindHistogram, otsdbformat.KindOther} {
		line("skipped_columns_"+k.String(), s.Columns[k].Load())
	}
	line("skipped_columns_corrupt", s.CorruptColumns.Load())
	line("skipped_duplicate_points", s.DuplicatePoints.Load())
	line("skipped_rows_unknown_uid", s.UnknownUIDRows.Load())
	line("skipped_points_unknown_uid", s.UnknownUIDPoints.Load())
	line("skipped_rows_bad_key", s.BadKeyRows.Load())
	line("skipped_rows_global_annotation", s.GlobalAnnotationRows.Load())
}

// rejectFromOpenTSDB refuses --from-opentsdb on the other import commands.
func rejectFromOpenTSDB(o *importOptions, cmd string) error {
	if o.opentsdb.fromFlag == "" {
		return nil
	}
	return fmt.Errorf("--from-opentsdb imports OpenTSDB's tables: it does not go with tsdb import %s (run tsdb import "+
		"opentsdb %s alone)", cmd, strings.TrimSpace(o.opentsdb.fromFlag))
}
