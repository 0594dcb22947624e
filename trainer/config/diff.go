package config

import "reflect"

// Diff lists the keys whose value in c differs from other's, in
// declaration order (nil when the two configs are equal key for key).
func (c Config) Diff(other Config) []string {
	now := leaves(reflect.ValueOf(&c).Elem(), "")
	was := leaves(reflect.ValueOf(&other).Elem(), "")
	var out []string
	for i, k := range now {
		if !reflect.DeepEqual(k.value.Interface(), was[i].value.Interface()) {
			out = append(out, k.path)
		}
	}
	return out
}
