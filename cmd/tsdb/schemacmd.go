package main

import (
	"github.com/prometheus/common/model"

	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/hbtsdb/hbtsdb/kv/hbase"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
)

func registerSchema(a *app) {
	cmd := a.kp.Command("schema", "Create or check hbtsdb's tables and schema settings.")

	create := cmd.Command("create", "Create the tables and write the schema meta row (bucket width, salts, format version,\n"+
		"resolution list); on a store that exists, record --rollups and create the tables of resolutions added.\n\n"+
		"Existing tables are left as they are. With --print nothing is touched: the hbase shell commands that\n"+
		"create the same tables and meta row are printed, for operators who create tables by hand.")
	printCreate := flag(create, "print", "Print the hbase shell commands instead of creating anything.").Bool()
	a.actions[create.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		if *printCreate {
			return printSchema(a.out, a.common)
		}
		return createSchema(ctx, a.common, logger)
	}

	check := cmd.Command("check", "Check that the tables exist and that the store's schema settings match this process's flags.\n\n"+
		"Exits 1 naming both values when they differ, or when --rollups changes the retention of a resolution the store\n"+
		"records (tsdb serve would refuse it).")
	printCheck := flag(check, "print", "Also print the settings and tables found.").Bool()
	a.actions[check.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		return checkSchema(ctx, a.out, a.common, *printCheck, logger)
	}
}

func printSchema(w io.Writer, c *commonFlags) error {
	_, settings, err := c.resolve()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# hbtsdb schema format %d: bucket width %s, %d salts; paste into `hbase shell`.\n",
		settings.FormatVersion, settings.BucketWidth, settings.Salts)
	tables, err := c.tableOptions(settings)
	if err != nil {
		return err
	}
	fmt.Fprint(w, hbase.ShellCommands(*c.hbaseTablePrefix, schema.Tables(tables)))
	for _, cell := range schema.SettingsCells(settings) {
		fmt.Fprintf(w, "put '%s%s', '%s', '%s:%s', '%s'\n", *c.hbaseTablePrefix, schema.TableMeta,
			schema.MetaSchemaRow, schema.FamilyMeta, cell.Qualifier, cell.Value)
	}
	fmt.Fprintf(w, "put '%s%s', '%s', '%s:%s', '%s'\n", *c.hbaseTablePrefix, schema.TableMeta,
		schema.MetaSchemaRow, schema.FamilyMeta, schema.QualifierRollups, schema.FormatRollups(tables.Rollups))
	return nil
}

func createSchema(ctx context.Context, c *commonFlags, logger *slog.Logger) error {
	addr, settings, err := c.resolve()
	if err != nil {
		return err
	}
	tables, err := c.tableOptions(settings)
	if err != nil {
		return err
	}
	st, err := c.openStore(ctx, addr, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := provision.Create(ctx, st, settings, tables, c.provisionOptions(addr, logger)...); err != nil {
		return err
	}
	logger.Info("schema ready", "storage", addr.String(), "bucket_width", settings.BucketWidth, "salt_buckets", settings.Salts,
		"rollups", schema.FormatRollups(tables.Rollups))
	return nil
}

func checkSchema(ctx context.Context, w io.Writer, c *commonFlags, print bool, logger *slog.Logger) error {
	addr, want, err := c.resolve()
	if err != nil {
		return err
	}
	opts, err := c.tableOptions(want)
	if err != nil {
		return err
	}
	st, err := c.openExistingStore(ctx, addr, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	got, err := provision.Check(ctx, st, want)
	if err != nil {
		return err
	}
	recorded, ok, err := provision.ReadRollups(ctx, st)
	if err != nil {
		return err
	}
	rawRetention, rawRecorded, err := provision.ReadRawRetention(ctx, st)
	if err != nil {
		return err
	}
	exemplarRetention, exemplarRecorded, err := provision.ReadExemplarRetention(ctx, st)
	if err != nil {
		return err
	}
	tables, err := st.ListTables(ctx)
	if err != nil {
		return fmt.Errorf("list tables of %s: %w", addr, err)
	}
	if print {
		rollups := schema.FormatRollups(recorded)
		if !ok {
			rollups = "(not recorded)"
		}
		fmt.Fprintf(w, "storage: %s\nformat_version: %d (%s; this binary supports 1 to %d)\nbucket_width: %s\nsalt_buckets: %d\nrollups: %s\n",
			addr, got.FormatVersion, schema.DescribeFormat(got.FormatVersion), schema.CurrentFormatVersion, got.BucketWidth, got.Salts, rollups)
		if configured := schema.FormatRollups(opts.Rollups); !ok || configured != rollups {
			fmt.Fprintf(w, "rollups_configured: %s (tsdb serve records it at start)\n", configured)
		}
		if rawRecorded {
			fmt.Fprintf(w, "raw_retention: %s\n", model.Duration(rawRetention))
		} else {
			fmt.Fprintf(w, "raw_retention: (not recorded; tsdb serve records --retention.raw=%s at start)\n", model.Duration(opts.RawRetention))
		}
		if exemplarRecorded {
			fmt.Fprintf(w, "exemplar_retention: %s\n", model.Duration(exemplarRetention))
		} else {
			fmt.Fprintf(w, "exemplar_retention: (not recorded; tsdb serve records --retention.exemplars=%s at start)\n", model.Duration(opts.ExemplarRetention))
		}
		fmt.Fprintf(w, "tables: %s\n", strings.Join(tables, " "))
	}
	if !slices.Contains(tables, schema.TableExemplars) {
		return provision.MissingExemplarTableError()
	}
	if !slices.Contains(tables, schema.TablePending) {
		return provision.MissingPendingTableError()
	}
	if exemplarRecorded {
		if err := provision.ExemplarRetentionError(exemplarRetention, opts.ExemplarRetention, c.provisionOptions(addr, logger)...); err != nil {
			return err
		}
	}
	if rawRecorded {
		if err := provision.RawRetentionError(rawRetention, opts.RawRetention, opts, c.provisionOptions(addr, logger)...); err != nil {
			return err
		}
	}
	if ok {
		// What tsdb serve would refuse.
		return provision.ChangedRetentionError(provision.CompareRollups(recorded, opts.Rollups), opts.Rollups, c.provisionOptions(addr, logger)...)
	}
	return nil
}
