package db

import "github.com/hbtsdb/hbtsdb/index"

// RegistryStats returns the counters of the series registry the DB's writer and
// reader share: cache and store hits, series registered, races lost.
func (db *DB) RegistryStats() index.RegistryStats { return db.registry.Stats() }
