// Package promapi is hbtsdb's HTTP surface: the operational endpoints (/-/healthy,
// /-/ready), and, as they land, Prometheus remote write and read, the Prometheus
// HTTP API and the native JSON API. It wires requests to the layers below and maps
// their errors to status codes in one place; it holds no storage logic and never
// imports a storage backend.
package promapi
