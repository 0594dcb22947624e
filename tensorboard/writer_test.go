package tensorboard

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reader is an independent reader of event files: Python's protobuf (the
// Debian package python3-protobuf) with the messages declared from the
// field numbers of TensorFlow's event.proto and summary.proto, and its own
// table-driven CRC-32C. It checks both CRCs of every record and prints the
// events as JSON.
const reader = `
import json, struct, sys
from google.protobuf import descriptor_pb2, descriptor_pool
try:
    from google.protobuf.message_factory import GetMessageClass
except ImportError:
    from google.protobuf import message_factory
    GetMessageClass = lambda d: message_factory.MessageFactory().GetPrototype(d)

F = descriptor_pb2.FieldDescriptorProto
fd = descriptor_pb2.FileDescriptorProto(name="tb_check.proto", package="tbcheck", syntax="proto3")
def msg(name, fields):
    m = fd.message_type.add(name=name)
    for fname, num, typ, label, tname in fields:
        f = m.field.add(name=fname, number=num, type=typ, label=label)
        if tname:
            f.type_name = tname
opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
msg("Value", [("tag", 1, F.TYPE_STRING, opt, None), ("simple_value", 2, F.TYPE_FLOAT, opt, None)])
msg("Summary", [("value", 1, F.TYPE_MESSAGE, rep, ".tbcheck.Value")])
msg("Event", [("wall_time", 1, F.TYPE_DOUBLE, opt, None), ("step", 2, F.TYPE_INT64, opt, None),
              ("file_version", 3, F.TYPE_STRING, opt, None), ("summary", 5, F.TYPE_MESSAGE, opt, ".tbcheck.Summary")])
pool = descriptor_pool.DescriptorPool()
pool.Add(fd)
Event = GetMessageClass(pool.FindMessageTypeByName("tbcheck.Event"))

table = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    table.append(c)
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = table[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
def masked(b):
    c = crc32c(b)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
data = open(sys.argv[1], "rb").read()
out, pos = [], 0
while pos < len(data):
    head = data[pos:pos + 8]
    (n,) = struct.unpack("<Q", head)
    (hcrc,) = struct.unpack("<I", data[pos + 8:pos + 12])
    body = data[pos + 12:pos + 12 + n]
    (bcrc,) = struct.unpack("<I", data[pos + 12 + n:pos + 16 + n])
    if hcrc != masked(head) or bcrc != masked(body):
        sys.exit("bad CRC in the record at byte %d" % pos)
    pos += 16 + n
    e = Event()
    e.ParseFromString(body)
    out.append({"wall_time": e.wall_time, "step": e.step, "file_version": e.file_version,
                "values": [[v.tag, v.simple_value] for v in e.summary.value]})
print(json.dumps(out))
`

// python finds a python3 that has the protobuf package, or skips.
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import google.protobuf").Run() == nil {
			return path
		}
	}
	t.Skip("no python3 with the protobuf package (Debian python3-protobuf; `make deps` installs it): skipping the event file reader test")
	return ""
}

// readEvents reads an event file with the independent reader.
type readEvent struct {
	WallTime    float64 `json:"wall_time"`
	Step        int64   `json:"step"`
	FileVersion string  `json:"file_version"`
	Values      [][2]any
}

func TestEventFileReadByProtobuf(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "tb"))
	if err != nil {
		t.Fatal(err)
	}
	// Wall times exact in binary: 1.7e9 + 0.5 s and + 0.25 s.
	t1 := time.Unix(1_700_000_000, 500_000_000)
	t2 := time.Unix(1_700_000_060, 250_000_000)
	if err := w.Scalars(1, t1, map[string]float64{"reward_mean": 0.5, "eval/em": 0.25, "kl_ref": math.NaN()}); err != nil {
		t.Fatal(err)
	}
	// 1e-6 is not a float32: the file holds float32(1e-6), which reads back
	// as 9.999999974752427e-07; 300 is exact.
	if err := w.Scalars(300, t2, map[string]float64{"lr": 1e-6, "reward_mean": -0.75, "time_iteration_s": 300}); err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(301, t2, map[string]float64{"x": math.Inf(1)}); err != nil { // nothing finite: no event
		t.Fatal(err)
	}
	path := w.Path()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(filepath.Base(path), "tfevents") || filepath.Dir(path) != filepath.Join(dir, "tb") {
		t.Errorf("event file %s: TensorBoard reads files named *tfevents* in the folder it is given", path)
	}
	script := filepath.Join(dir, "read.py")
	if err := os.WriteFile(script, []byte(reader), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, script, path).CombinedOutput()
	if err != nil {
		t.Fatalf("reader: %v\n%s", err, out)
	}
	var evs []readEvent
	if err := json.Unmarshal(out, &evs); err != nil {
		t.Fatalf("reader output %s: %v", out, err)
	}
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3 (the file version, two of scalars): %s", len(evs), out)
	}
	if evs[0].FileVersion != "brain.Event:2" || evs[0].Step != 0 || len(evs[0].Values) != 0 || evs[0].WallTime < 1.7e9 {
		t.Errorf("first event %+v, want the file version brain.Event:2 at a wall time of now", evs[0])
	}
	check := func(e readEvent, wall float64, step int64, want [][2]any) {
		t.Helper()
		if e.WallTime != wall || e.Step != step || e.FileVersion != "" {
			t.Errorf("event at step %d: wall time %v step %d version %q, want %v %d \"\"", step, e.WallTime, e.Step, e.FileVersion, wall, step)
		}
		if len(e.Values) != len(want) {
			t.Fatalf("step %d: values %v, want %v", step, e.Values, want)
		}
		for i := range want {
			if e.Values[i][0] != want[i][0] || e.Values[i][1] != want[i][1] {
				t.Errorf("step %d value %d: %v, want %v", step, i, e.Values[i], want[i])
			}
		}
	}
	check(evs[1], 1_700_000_000.5, 1, [][2]any{{"eval/em", 0.25}, {"reward_mean", 0.5}})
	check(evs[2], 1_700_000_060.25, 300, [][2]any{{"lr", 9.999999974752427e-07}, {"reward_mean", -0.75}, {"time_iteration_s", 300.0}})
}
