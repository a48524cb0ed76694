package main

import (
	"strings"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/config"
)

// registerOTLPFlags binds the choices of the OTLP endpoint (POST
// /api/v1/otlp/v1/metrics, promapi.OTLPOptions): the keys of Prometheus'
// otlp: configuration section as --otlp.* flags of the same names, and
// Prometheus' OTLP feature flags. Prometheus' configuration loader validates
// them (promapi.OTLPOptions.Validate); its errors name the configuration
// keys, which the binder turns into these flags.
func (o *serveOptions) registerOTLPFlags() {
	c := config.DefaultOTLPConfig
	o.http.OTLP.Config = &c
	b, opts := o.flags, &o.http.OTLP
	strategies := []string{string(otlptranslator.UnderscoreEscapingWithSuffixes),
		string(otlptranslator.UnderscoreEscapingWithoutSuffixes), string(otlptranslator.NoUTF8EscapingWithSuffixes),
		string(otlptranslator.NoTranslation)}
	b.flag("otlp.translation-strategy", "", "How OTLP metric and attribute names become Prometheus names "+
		"(Prometheus' otlp: translation_strategy): UnderscoreEscapingWithSuffixes (http.server.duration -> "+
		"http_server_duration_seconds), UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes (UTF-8 names "+
		"kept, unit and _total suffixes added) or NoTranslation (names as sent).").
		Default(string(c.TranslationStrategy)).
		SetValue(&enumValue{name: "otlp.translation-strategy", value: (*string)(&c.TranslationStrategy), allowed: strategies})
	b.flag("otlp.promote-resource-attributes", "'promote_resource_attributes'", "Resource attributes that "+
		"become labels of every series of their resource (comma-separated or repeated; Prometheus' otlp: "+
		"promote_resource_attributes), e.g. service.instance.id,k8s.namespace.name. The others are in target_info.").
		SetValue(&listValue{v: &c.PromoteResourceAttributes})
	b.flag("otlp.promote-all-resource-attributes", "'promote_all_resource_attributes'", "Promote every "+
		"resource attribute but those of --otlp.ignore-resource-attributes to labels. Not with "+
		"--otlp.promote-resource-attributes.").Default("false").BoolVar(&c.PromoteAllResourceAttributes)
	b.flag("otlp.ignore-resource-attributes", "'ignore_resource_attributes'", "Resource attributes "+
		"--otlp.promote-all-resource-attributes leaves out (comma-separated or repeated).").
		SetValue(&listValue{v: &c.IgnoreResourceAttributes})
	b.flag("otlp.keep-identifying-resource-attributes", "", "Keep service.name, service.namespace and "+
		"service.instance.id as labels of target_info too (they are job and instance anyway).").
		Default("false").BoolVar(&c.KeepIdentifyingResourceAttributes)
	b.flag("otlp.convert-histograms-to-nhcb", "", "Store OTLP explicit-bucket histograms as native histograms "+
		"with custom buckets instead of classic _bucket/_sum/_count series.").
		Default("false").BoolVar(&c.ConvertHistogramsToNHCB)
	b.flag("otlp.promote-scope-metadata", "", "Add the instrumentation scope's name, version, schema URL and "+
		"attributes as otel_scope_* labels.").Default("false").BoolVar(&c.PromoteScopeMetadata)
	b.flag("otlp.label-name-underscore-sanitization", "", "Prefix label names that start with a single _ "+
		"with key (escaping strategies only).").Default("true").BoolVar(&c.LabelNameUnderscoreSanitization)
	b.flag("otlp.label-name-preserve-multiple-underscores", "", "Keep runs of underscores in label names "+
		"(escaping strategies only); false collapses them to one.").
		Default("true").BoolVar(&c.LabelNamePreserveMultipleUnderscores)
	b.flag("otlp.delta-to-cumulative", "promapi: OTLPOptions.ConvertDelta", "Convert delta sums and histograms "+
		"to cumulative in this process's memory before storing them (Prometheus' --enable-feature="+
		"otlp-deltatocumulative); without it they are rejected, unless --otlp.native-delta-ingestion. Several tsdb "+
		"processes each keep their own sums: send one source's deltas to one process.").
		Default("false").BoolVar(&opts.ConvertDelta)
	b.flag("otlp.native-delta-ingestion", "promapi: OTLPOptions.NativeDelta", "Store delta samples as sent, as "+
		"metrics of unknown type (Prometheus' --enable-feature=otlp-native-delta-ingestion, experimental).").
		Default("false").BoolVar(&opts.NativeDelta)
	b.flag("otlp.type-and-unit-labels", "", "Add __type__ and __unit__ labels to OTLP series (Prometheus' "+
		"--enable-feature=type-and-unit-labels).").Default("false").BoolVar(&opts.TypeAndUnitLabels)
}

// listValue is a repeatable flag of comma-separated names, appended to *v as
// given (trimmed): an empty one is kept, for Prometheus' validation to name.
type listValue struct{ v *[]string }

func (l *listValue) Set(s string) error {
	for _, name := range strings.Split(s, ",") {
		*l.v = append(*l.v, strings.TrimSpace(name))
	}
	return nil
}

func (l *listValue) String() string     { return strings.Join(*l.v, ",") }
func (l *listValue) IsCumulative() bool { return true }
