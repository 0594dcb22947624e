package report

import (
	"bytes"
	"encoding/json"
	"sort"
)

// configDiff tabulates the configuration keys (flattened to dotted paths)
// whose values differ between the runs, one column per run; the caller
// sets the header.
func configDiff(runs []*runData) table {
	flat := make([]map[string]string, len(runs))
	keys := map[string]bool{}
	for i, r := range runs {
		flat[i] = flattenJSON(r.info.config)
		for k := range flat[i] {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	t := table{Caption: "Configuration differences"}
	for _, k := range sorted {
		cells, differ := []string{k}, false
		for i := range runs {
			v, ok := flat[i][k]
			if !ok {
				v = "(unset)"
			}
			if i > 0 && v != cells[1] {
				differ = true
			}
			cells = append(cells, v)
		}
		if differ {
			t.Rows = append(t.Rows, row{Cells: cells})
		}
	}
	return t
}

// flattenJSON maps every leaf of a JSON object to its compact JSON text,
// keyed by its dotted path ("rollout.temperature"); arrays and empty
// objects are leaves. A document that is not an object is the single key
// "(config)".
func flattenJSON(doc string) map[string]string {
	out := map[string]string{}
	var buf bytes.Buffer
	var obj map[string]json.RawMessage
	if json.Compact(&buf, []byte(doc)) != nil || json.Unmarshal(buf.Bytes(), &obj) != nil || obj == nil {
		out["(config)"] = doc
		return out
	}
	flattenInto(out, "", obj)
	return out
}

// flattenInto adds the leaves of obj (compact JSON) under prefix.
func flattenInto(out map[string]string, prefix string, obj map[string]json.RawMessage) {
	for k, raw := range obj {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		var sub map[string]json.RawMessage
		if json.Unmarshal(raw, &sub) == nil && len(sub) > 0 {
			flattenInto(out, key, sub)
			continue
		}
		out[key] = string(raw)
	}
}
