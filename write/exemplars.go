package write

import (
	"github.com/prometheus/prometheus/model/exemplar"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// appendExemplarMutations appends to muts the puts (of table
// schema.TableExemplars) that store ex, the validated exemplars of the series
// whose data key is k (k.BucketStart is ignored), using buf for keys and values;
// it returns both and how many exemplars the puts store. Placeholder: the
// exemplar storage of issue 11 fills it in; today it stores nothing.
func (w *Writer) appendExemplarMutations(muts []kv.Mutation, buf []byte, k schema.DataKey, ex []exemplar.Exemplar) ([]kv.Mutation, []byte, int) {
	return muts, buf, 0
}
