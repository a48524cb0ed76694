// Package optcheck holds the checks shared by the Validate methods of hbtsdb's
// option structs (write.Options, query.Options, index.RegistryOptions, ...), so
// that every package words the same refusal the same way, e.g.
// "write: Options.MaxBatch must not be negative (0 means the default, 10000), got -1".
// It imports nothing of hbtsdb.
package optcheck

import "fmt"

// NoLimit is the zero clause of a field whose 0 means no limit.
const NoLimit = "0 means no limit"

// Default returns the zero clause of a field whose 0 takes the default def:
// "0 means the default, 10000". def is printed with %v (a time.Duration as
// "5m0s").
func Default[T ~int | ~int64](def T) string {
	return fmt.Sprintf("0 means the default, %v", def)
}

// NotNegative returns the error of an option field whose 0 means what zero says
// (NoLimit, Default(def), or any other clause such as "0 means forever") and
// whose negative values mean nothing; nil when v >= 0. field is the qualified
// name, prefix included ("write: Options.MaxBatch"); v is printed with %v (a
// time.Duration as "-1s"):
//
//	write: Options.MaxBatch must not be negative (0 means the default, 10000), got -1
//
// Being nil when v is valid, the result can go straight into errors.Join.
func NotNegative[T ~int | ~int64](field string, v T, zero string) error {
	if v >= 0 {
		return nil
	}
	return fmt.Errorf("%s must not be negative (%s), got %v", field, zero, v)
}
