package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/backend"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
)

// resolve parses --storage and returns the schema settings this process is
// configured with for that backend, checked.
func (c *commonFlags) resolve() (backend.Address, schema.Settings, error) {
	addr, err := backend.Parse(*c.storage)
	if err != nil {
		return backend.Address{}, schema.Settings{}, err
	}
	settings := c.schemaSettings(addr)
	if err := settings.Validate(); err != nil {
		return backend.Address{}, schema.Settings{}, fmt.Errorf("schema flags: %w", err)
	}
	return addr, settings, nil
}

// openStore opens the store --storage names.
func (c *commonFlags) openStore(ctx context.Context, addr backend.Address, logger *slog.Logger) (kv.Store, error) {
	return backend.Open(ctx, addr, c.backendOptions(logger))
}

// openExistingStore opens the store --storage names without creating an
// embedded one (for commands that only look at a store).
func (c *commonFlags) openExistingStore(ctx context.Context, addr backend.Address, logger *slog.Logger) (kv.Store, error) {
	o := c.backendOptions(logger)
	o.MustExist = true
	return backend.Open(ctx, addr, o)
}

func (c *commonFlags) backendOptions(logger *slog.Logger) backend.Options {
	o := backend.Options{
		HBaseTablePrefix:      *c.hbaseTablePrefix,
		HBaseZooKeeperTimeout: *c.hbaseZKTimeout,
		HBaseRPCTimeout:       *c.hbaseRPCTimeout,
		EmbeddedMinFreeBytes:  int64(*c.minFreeBytes),
		EmbeddedHeadMaxBytes:  int64(*c.headMaxBytes),
		Logger:                logger,
	}
	if *c.head {
		o.EmbeddedHeadHolds = schema.Transient
	}
	return o
}

// schemaSettings are the schema settings this process is configured with; the salt
// bucket default depends on the backend.
func (c *commonFlags) schemaSettings(addr backend.Address) schema.Settings {
	salt := *c.saltCount
	if salt == 0 {
		salt = *c.oldSaltCount
	}
	if salt == 0 {
		salt = schema.DefaultSaltsEmbedded
		if addr.Kind == backend.HBase {
			salt = schema.DefaultSaltsHBase
		}
	}
	return schema.Settings{
		FormatVersion: schema.CurrentFormatVersion,
		BucketWidth:   *c.bucketWidth,
		Salts:         salt,
		HostLabels:    strings.Split(*c.hostLabels, ","),
	}
}

// provisionOptions are the options of provision.Open and Create: the logger of
// the resolution list's changes and, on HBase, the table prefix their messages
// name tables with.
func (c *commonFlags) provisionOptions(addr backend.Address, logger *slog.Logger) []provision.Option {
	opts := []provision.Option{provision.WithLogger(logger)}
	if addr.Kind == backend.HBase {
		opts = append(opts, provision.WithHBaseTablePrefix(*c.hbaseTablePrefix))
	}
	return opts
}

// tableOptions are the settings of the tables this process would create, the
// resolution list (--rollups) checked against the bucket width.
func (c *commonFlags) tableOptions(settings schema.Settings) (schema.TableOptions, error) {
	rollups, err := schema.ParseRollups(*c.rollups)
	if err == nil {
		err = schema.ValidateRollups(rollups, settings.BucketWidth)
	}
	if err != nil {
		return schema.TableOptions{}, fmt.Errorf("--rollups=%q: %w", *c.rollups, err)
	}
	opts := schema.TableOptions{
		RawRetention: *c.rawRetention,
		Rollups:      rollups,
		Compression:  *c.compression,
		Salts:        settings.Salts,
	}
	opts.ExemplarRetention = *c.exemplarRetention
	return opts, nil
}
