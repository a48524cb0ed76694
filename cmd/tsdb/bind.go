package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"
)

// binder registers flags bound straight into the fields of the options structs
// of the packages that do the work (promapi.QueryOptions, write.Limits, ...). A
// flag's default is the field's value when it is bound, so each default is
// written once, by the package that owns the field. The packages validate their
// own options (Validate) and name the field in their errors; explain turns those
// names back into the flags a user typed.
type binder struct {
	on flagger
	// flags maps the field as a package's Validate names it, with the package's
	// error prefix ("write: Limits.MaxSeriesPerRequest"), to its flag.
	flags map[string]string
}

func newBinder(on flagger) *binder { return &binder{on: on, flags: map[string]string{}} }

// flag registers --name (and its environment twin) for field; field is "" for a
// flag whose value no Validate checks.
func (b *binder) flag(name, field, help string) *kingpin.FlagClause {
	if field != "" {
		b.flags[field] = "--" + name
	}
	return flag(b.on, name, help)
}

// int binds --name to *v, with *v as its default.
func (b *binder) int(name, field, help string, v *int) {
	b.flag(name, field, help).Default(strconv.Itoa(*v)).IntVar(v)
}

// duration binds --name to *v (a Prometheus-style duration: 90s, 15m, 1h, 400d),
// with *v as its default.
func (b *binder) duration(name, field, help string, v *time.Duration) {
	c := b.flag(name, field, help).Default(model.Duration(*v).String())
	c.SetValue((*durationValue)(v))
}

// bytes binds --name to *v (a size such as 512KiB or 16MiB), with *v as its
// default.
func bytesFlag[T int | int64](b *binder, name, field, help string, v *T) {
	c := b.flag(name, field, help).Default(units.Base2Bytes(*v).String())
	c.SetValue(&bytesValue[T]{v})
}

// explain rewrites the field names in err, a Validate error of bound options,
// into the flags that set them, so that the user reads
// "--write.max-series-per-request must not be negative" rather than a Go field.
func (b *binder) explain(err error) error {
	if err == nil {
		return nil
	}
	fields := make([]string, 0, len(b.flags))
	for f := range b.flags {
		fields = append(fields, f)
	}
	// Longest first, so that a field whose name is a prefix of another's never
	// replaces part of it.
	sort.Slice(fields, func(i, j int) bool { return len(fields[i]) > len(fields[j]) })
	msg := err.Error()
	for _, f := range fields {
		msg = strings.ReplaceAll(msg, f, b.flags[f])
	}
	return errors.New(msg)
}

// bytesValue is a kingpin value for byte sizes bound to an integer field.
type bytesValue[T int | int64] struct{ v *T }

func (b *bytesValue[T]) Set(s string) error {
	n, err := units.ParseBase2Bytes(s)
	if err != nil {
		return fmt.Errorf("%q is not a size like 512KiB or 16MiB: %w", s, err)
	}
	*b.v = T(n)
	return nil
}

func (b *bytesValue[T]) String() string { return units.Base2Bytes(*b.v).String() }
