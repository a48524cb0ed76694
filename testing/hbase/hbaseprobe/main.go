// Command hbaseprobe tells whether an HBase is usable by hbtsdb: it creates a table,
// writes a cell, reads it back and drops the table, all through gohbase, the client
// hbtsdb itself uses. testing/hbase/hbase.sh runs it until it succeeds. It exits 0
// when HBase is usable and 1 with the reason otherwise.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
)

func main() {
	zk := flag.String("zk", "127.0.0.1:2181", "ZooKeeper quorum of the HBase to probe")
	timeout := flag.Duration("timeout", 20*time.Second, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := probe(ctx, *zk); err != nil {
		fmt.Fprintf(os.Stderr, "hbaseprobe: HBase at ZooKeeper %s not usable: %v\n", *zk, err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func probe(ctx context.Context, zk string) error {
	table := fmt.Sprintf("hbtsdb-probe-%d", time.Now().UnixNano())
	admin := gohbase.NewAdminClient(zk, gohbase.ZookeeperTimeout(5*time.Second))
	create := hrpc.NewCreateTable(ctx, []byte(table), map[string]map[string]string{"f": {}})
	if err := admin.CreateTable(create); err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	defer func() {
		cleanup, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = admin.DisableTable(hrpc.NewDisableTable(cleanup, []byte(table)))
		_ = admin.DeleteTable(hrpc.NewDeleteTable(cleanup, []byte(table)))
	}()

	client := gohbase.NewClient(zk, gohbase.ZookeeperTimeout(5*time.Second))
	defer client.Close()
	put, err := hrpc.NewPutStr(ctx, table, "row", map[string]map[string][]byte{"f": {"q": []byte("v")}})
	if err != nil {
		return err
	}
	if _, err := client.Put(put); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	get, err := hrpc.NewGetStr(ctx, table, "row")
	if err != nil {
		return err
	}
	res, err := client.Get(get)
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if len(res.Cells) != 1 || !bytes.Equal(res.Cells[0].Value, []byte("v")) {
		return fmt.Errorf("get returned %d cells, want the one written", len(res.Cells))
	}
	return nil
}
