// An @openai/agents agent with a function tool, run end to end against the
// gateway through the Chat Completions API. Prints the final output and
// the queries the tool was called with, as JSON.
const { Agent, run, tool, OpenAIChatCompletionsModel, setTracingDisabled } = require('@openai/agents');
const OpenAI = require('openai').default || require('openai');
const { z } = require('zod');

setTracingDisabled(true);
const queries = [];
const search = tool({
  name: 'search',
  description: 'Search the corpus.',
  parameters: z.object({ query: z.string() }),
  execute: async ({ query }) => { queries.push(query); return process.env.RESPONSE; },
});
const agent = new Agent({
  name: 'searcher',
  instructions: process.env.SYSTEM,
  tools: [search],
  model: new OpenAIChatCompletionsModel(new OpenAI({ maxRetries: 0 }), process.env.MODEL),
  modelSettings: { temperature: 0 },
});

run(agent, process.env.QUESTION, { maxTurns: 4 })
  .then((r) => console.log(JSON.stringify({ finalOutput: r.finalOutput, queries })))
  .catch((e) => { console.error(e); process.exit(1); });
