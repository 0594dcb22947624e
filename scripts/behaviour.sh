#!/usr/bin/env bash
# behaviour.sh STORE [TRAINER]: the search behaviour of a run's evaluations, per
# evaluated iteration, over its in-domain test episodes (neither naive RAG nor out of
# domain): exact match, parsed search calls per episode, the shares of multi-hop
# (2- and 3-hop) episodes that search once, twice, three times or more, of episodes
# whose answer a search result of theirs contained, and of episodes with no search.
# Reads the store through `trainer rollouts sql` (TRAINER, default bin/trainer).
set -euo pipefail
store=${1:?usage: behaviour.sh STORE [TRAINER]}
trainer=${2:-bin/trainer}
"$trainer" rollouts sql --store "$store" "
with ep as (
  select t.iteration it, t.hops, t.correct,
    (select count(*) from tool_calls c where c.tid = t.tid and c.tool = 'search') ns,
    (select count(*) from tool_calls c where c.tid = t.tid and c.tool = 'search' and t.answer <> ''
       and instr(lower(c.result), lower(t.answer)) > 0) hit
  from trajectories t
  where t.split = 'eval' and t.id not like '%-eval-rag-%' and t.id not like '%-eval-ood-%'
)
select it as iteration, count(*) as episodes, round(avg(correct), 3) as em,
  round(avg(ns), 3) as searches,
  round(avg(case when hops >= 2 then ns = 1 end), 3) as multihop_1,
  round(avg(case when hops >= 2 then ns = 2 end), 3) as multihop_2,
  round(avg(case when hops >= 2 then ns >= 3 end), 3) as multihop_3plus,
  round(avg(hit > 0), 3) as answer_in_result,
  round(avg(ns = 0), 3) as no_search
from ep group by it order by it"
