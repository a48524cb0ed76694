package main

import "github.com/hbtsdb/hbtsdb/promapi"

// registerExportFlags binds the bounds of VictoriaMetrics' /api/v1/export
// (promapi.ExportOptions). The VictoriaMetrics import endpoints are bounded by
// the --write.* flags, as every write endpoint.
func (o *serveOptions) registerExportFlags() {
	b, e := o.flags, &o.http.Export
	*e = promapi.DefaultExportOptions()
	b.int("export.max-samples-per-line", "promapi: ExportOptions.MaxSamplesPerLine", "Most samples in one JSON "+
		"line of /api/v1/export; a series with more is written as several lines, so that an export holds one "+
		"line in memory. The max_rows_per_line query argument may ask for fewer.", &e.MaxSamplesPerLine)
	b.int("export.max-concurrent", "promapi: ExportOptions.MaxConcurrent", "Exports (/api/v1/export) that run "+
		"at once; more wait for a slot.", &e.MaxConcurrent)
}
