package promapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/prometheus/prometheus/model/metadata"
)

// metadata serves GET /api/v1/metadata from the metric metadata that
// remote write stored (query.Reader.ListMetadata / Metadata), in Prometheus'
// shape: {"metric": [{"type": ..., "help": ..., "unit": ...}], ...}. Prometheus
// answers it from its scrape targets, which hbtsdb does not have, so this one
// endpoint is ours; its parameters and errors are Prometheus':
//   - metric: only that metric family (an unknown one gives {});
//   - limit: at most that many metric families; a negative limit is no limit and
//     0 gives {}, as in Prometheus (web/api/v1 metricMetadata);
//   - limit_per_metric: at most that many entries per family; hbtsdb keeps one
//     per family (the latest sent), so it only has to be a number.
func (h *readHandler) metadata(w http.ResponseWriter, r *http.Request) {
	limit := -1
	if s := r.FormValue("limit"); s != "" {
		var err error
		if limit, err = strconv.Atoi(s); err != nil {
			respondError(w, errBadDataType, errors.New("limit must be a number"))
			return
		}
	}
	if s := r.FormValue("limit_per_metric"); s != "" {
		if _, err := strconv.Atoi(s); err != nil {
			respondError(w, errBadDataType, errors.New("limit_per_metric must be a number"))
			return
		}
	}
	reader, err := h.reader()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res := map[string][]metadata.Metadata{}
	if limit == 0 {
		respondData(w, res)
		return
	}
	if metric := r.FormValue("metric"); metric != "" {
		m, ok, err := reader.Metadata(r.Context(), metric)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if ok {
			res[metric] = []metadata.Metadata{{Type: m.Type, Help: m.Help, Unit: m.Unit}}
		}
		respondData(w, res)
		return
	}
	all, err := reader.ListMetadata(r.Context(), max(limit, 0))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, m := range all {
		res[m.Metric] = []metadata.Metadata{{Type: m.Type, Help: m.Help, Unit: m.Unit}}
	}
	respondData(w, res)
}
