// Command otsdbtables creates (or drops) the four HBase tables OpenTSDB 2.4 needs,
// with the column families its src/create_table.sh names: <prefix>tsdb {t},
// <prefix>tsdb-uid {id, name}, <prefix>tsdb-tree {t} and <prefix>tsdb-meta {name}.
// testing/opentsdb/opentsdb.sh runs it before it starts a TSD on those tables. It
// goes through gohbase, the client hbtsdb itself uses, so no HBase shell is needed.
// A table that already exists is left as it is.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
)

// tables maps each OpenTSDB table (without prefix) to its column families, as
// OpenTSDB 2.4.1's src/create_table.sh creates them (one version where it says so).
var tables = []struct {
	name     string
	families map[string]map[string]string
}{
	{"tsdb", map[string]map[string]string{"t": {"VERSIONS": "1", "BLOOMFILTER": "ROW"}}},
	{"tsdb-uid", map[string]map[string]string{"id": {"BLOOMFILTER": "ROW"}, "name": {"BLOOMFILTER": "ROW"}}},
	{"tsdb-tree", map[string]map[string]string{"t": {"VERSIONS": "1", "BLOOMFILTER": "ROW"}}},
	{"tsdb-meta", map[string]map[string]string{"name": {"BLOOMFILTER": "ROW"}}},
}

func main() {
	zk := flag.String("zk", "", "ZooKeeper quorum of the HBase (host:port), required")
	prefix := flag.String("prefix", "", "prefix of the four table names (e.g. otsdb123-)")
	drop := flag.Bool("drop", false, "disable and delete the tables instead of creating them")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	if *zk == "" {
		fmt.Fprintln(os.Stderr, "otsdbtables: -zk is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	admin := gohbase.NewAdminClient(*zk, gohbase.ZookeeperTimeout(10*time.Second))
	run := create
	if *drop {
		run = remove
	}
	if err := run(ctx, admin, *prefix); err != nil {
		fmt.Fprintf(os.Stderr, "otsdbtables: HBase at ZooKeeper %s: %v\n", *zk, err)
		os.Exit(1)
	}
}

// create creates every table that does not exist yet.
func create(ctx context.Context, admin gohbase.AdminClient, prefix string) error {
	for _, t := range tables {
		name := prefix + t.name
		err := admin.CreateTable(hrpc.NewCreateTable(ctx, []byte(name), t.families))
		if err != nil && !strings.Contains(err.Error(), "TableExistsException") {
			return fmt.Errorf("create table %s: %w", name, err)
		}
		fmt.Println(name)
	}
	return nil
}

// remove disables and deletes the tables, reporting every failure.
func remove(ctx context.Context, admin gohbase.AdminClient, prefix string) error {
	var errs []error
	for _, t := range tables {
		name := []byte(prefix + t.name)
		if err := admin.DisableTable(hrpc.NewDisableTable(ctx, name)); err != nil && !strings.Contains(err.Error(), "TableNotEnabledException") {
			errs = append(errs, fmt.Errorf("disable table %s: %w", name, err))
			continue
		}
		if err := admin.DeleteTable(hrpc.NewDeleteTable(ctx, name)); err != nil {
			errs = append(errs, fmt.Errorf("delete table %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
