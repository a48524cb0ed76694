// Command gen writes hbtsdb's Grafana dashboards (package dashboards) as JSON:
//
//	go run ./dashboards/gen [-out dashboards/json]
//
// It rewrites every dashboard's file in -out and removes any other *.json file
// there, so that the folder holds exactly the generated dashboards. `make
// dashboards` runs it; the committed JSON must be its output
// (TestGeneratedJSONIsCommitted).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hbtsdb/hbtsdb/dashboards"
)

func main() {
	out := flag.String("out", filepath.Join("dashboards", "json"), "Folder to write the dashboards' JSON files into.")
	flag.Parse()
	names, err := dashboards.Write(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, n := range names {
		fmt.Println(filepath.Join(*out, n))
	}
}
