package deftag

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Weight float64 `yaml:"weight" default:"-0.05"`
}

type sample struct {
	Turns   int           `yaml:"turns" default:"4"`
	Timeout time.Duration `yaml:"timeout" default:"5s"`
	Scorer  string        `yaml:"scorer" default:"em"`
	Empty   string        `yaml:"empty" default:""`
	On      bool          `yaml:"on" default:"true"`
	List    []string      `yaml:"list" default:"[a, b]"`
	None    []string      `yaml:"none" default:"[]"`
	In      inner         `yaml:"in"`
	Skipped func()        `yaml:"-"`
}

func TestApply(t *testing.T) {
	var got sample
	if err := Apply(&got); err != nil {
		t.Fatal(err)
	}
	want := sample{Turns: 4, Timeout: 5 * time.Second, Scorer: "em", On: true, List: []string{"a", "b"}, None: []string{}, In: inner{Weight: -0.05}}
	if got.Skipped != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Apply = %+v, want %+v", got, want)
	}
}

func TestApplyErrors(t *testing.T) {
	var missing struct {
		In struct {
			X int `yaml:"x"`
		} `yaml:"in"`
	}
	if err := Apply(&missing); err == nil || !strings.Contains(err.Error(), "in.x has no default tag") {
		t.Errorf("missing tag: %v", err)
	}
	var bad struct {
		N int `yaml:"n" default:"many"`
	}
	if err := Apply(&bad); err == nil || !strings.Contains(err.Error(), "default of n") {
		t.Errorf("bad tag: %v", err)
	}
	if err := Apply(bad); err == nil {
		t.Error("Apply of a non-pointer: no error")
	}
}
