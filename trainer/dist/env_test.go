package dist

import (
	"strings"
	"testing"

	"github.com/agentrl/agentrl/torch"
)

func TestParseEnv(t *testing.T) {
	from := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	e, ok, err := parseEnv(from(map[string]string{}))
	if ok || err != nil {
		t.Fatalf("no variables: ok %v err %v, want a single process", ok, err)
	}
	// torchrun sets all six.
	e, ok, err = parseEnv(from(map[string]string{"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
		"MASTER_ADDR": "node0", "MASTER_PORT": "29400"}))
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	want := Env{Rank: 5, World: 8, LocalRank: 1, LocalWorld: 4, MasterAddr: "node0", MasterPort: 29400}
	if e != want {
		t.Errorf("got %+v, want %+v", e, want)
	}
	if v := strings.Join(e.Vars(), " "); v != "RANK=5 WORLD_SIZE=8 LOCAL_RANK=1 LOCAL_WORLD_SIZE=4 MASTER_ADDR=node0 MASTER_PORT=29400" {
		t.Errorf("Vars = %s", v)
	}
	if e.loopback() {
		t.Error("node0 is not loopback")
	}
	if e.AgentStore || e.storePrefix() != "" {
		t.Errorf("no agent store was announced: %+v", e)
	}
	// torchrun's agent serves the store: its workers see these two.
	e, _, err = parseEnv(from(map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "h",
		"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "2"}))
	if err != nil || !e.AgentStore || e.storePrefix() != "/worker/attempt_2" {
		t.Errorf("agent store: %+v %q, %v", e, e.storePrefix(), err)
	}
	// Without LOCAL_*: one machine; MASTER_PORT defaults to torch's 29500.
	e, _, err = parseEnv(from(map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}))
	if err != nil || e.LocalRank != 1 || e.LocalWorld != 2 || e.MasterPort != 29500 || !e.loopback() {
		t.Errorf("got %+v, %v", e, err)
	}
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"RANK": "0"}, "WORLD_SIZE is not set"},
		{map[string]string{"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h"}, "want 0 <= RANK < WORLD_SIZE"},
		{map[string]string{"RANK": "x", "WORLD_SIZE": "2"}, `RANK="x"`},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR is not set"},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "70000"}, "MASTER_PORT=70000"},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "2"}, "LOCAL_RANK=3"},
	} {
		_, ok, err := parseEnv(from(c.kv))
		if !ok || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: ok %v err %v, want an error with %q", c.kv, ok, err, c.want)
		}
	}
}

func TestShardAndNilGroup(t *testing.T) {
	var g *Group // a single process
	if g.Rank() != 0 || g.World() != 1 || !g.Leader() {
		t.Fatal("a nil group is rank 0 of 1")
	}
	xs := []int{0, 1, 2, 3, 4}
	if got := Shard(g, xs); len(got) != 5 {
		t.Errorf("single process shard = %v", got)
	}
	two := func(rank int) *Group { return &Group{env: Env{Rank: rank, World: 2}} }
	if a, b := Shard(two(0), xs), Shard(two(1), xs); len(a) != 3 || a[2] != 4 || len(b) != 2 || b[1] != 3 {
		t.Errorf("shards %v %v, want [0 2 4] [1 3]", a, b)
	}
	if v, err := Gather(g, "x"); err != nil || len(v) != 1 || v[0] != "x" {
		t.Errorf("gather = %v %v", v, err)
	}
	if any, err := g.Any(true); err != nil || !any {
		t.Errorf("any = %v %v", any, err)
	}
	if err := g.Close(); err != nil {
		t.Error(err)
	}
}

func TestBackendChoice(t *testing.T) {
	if _, err := backend("nccl", torch.CPU); err == nil || !strings.Contains(err.Error(), "needs a CUDA device") {
		t.Errorf("nccl on the CPU: %v", err)
	}
	if b, err := backend("auto", torch.CPU); err != nil || b.String() != "gloo" {
		t.Errorf("auto on the CPU: %v %v", b, err)
	}
	if _, err := backend("mpi", torch.CPU); err == nil {
		t.Error("mpi accepted")
	}
}
