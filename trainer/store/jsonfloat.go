package store

import (
	"encoding/json"
	"fmt"
	"math"
)

// encodeFloats writes a map of numbers as a JSON object. JSON has no NaN or
// infinity, so non-finite values are written as null (and read back as
// NaN). A nil map gives SQL NULL, an empty one "{}".
func encodeFloats(m map[string]float64) (any, error) {
	if m == nil {
		return nil, nil
	}
	o := make(map[string]*float64, len(m))
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			o[k] = nil
			continue
		}
		o[k] = &v
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// decodeFloats reads what encodeFloats wrote: NULL gives nil, null values NaN.
func decodeFloats(s *string) (map[string]float64, error) {
	if s == nil {
		return nil, nil
	}
	var o map[string]*float64
	if err := json.Unmarshal([]byte(*s), &o); err != nil {
		return nil, fmt.Errorf("decode %.40q: %w", *s, err)
	}
	m := make(map[string]float64, len(o))
	for k, v := range o {
		if v == nil {
			m[k] = math.NaN()
			continue
		}
		m[k] = *v
	}
	return m, nil
}

// encodeStrings writes a string list as a JSON array; nil gives SQL NULL.
func encodeStrings(v []string) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// decodeStrings reads what encodeStrings wrote: NULL gives nil, "[]" an
// empty slice.
func decodeStrings(s *string) ([]string, error) {
	if s == nil {
		return nil, nil
	}
	v := []string{}
	if err := json.Unmarshal([]byte(*s), &v); err != nil {
		return nil, fmt.Errorf("decode %.40q: %w", *s, err)
	}
	return v, nil
}
