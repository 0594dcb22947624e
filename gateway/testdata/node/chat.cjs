// The official openai SDK against the gateway: a tool call, the answer
// after the tool's response, logprobs, and the same conversation streamed.
// Prints one JSON object of what it saw.
const OpenAI = require('openai').default || require('openai');

const client = new OpenAI({ maxRetries: 0 }); // OPENAI_BASE_URL, OPENAI_API_KEY from the environment
const model = process.env.MODEL;
const tools = [JSON.parse(process.env.TOOL_JSON)];
const first = [
  { role: 'system', content: process.env.SYSTEM },
  { role: 'user', content: process.env.QUESTION },
];

async function main() {
  const out = {};
  const models = await client.models.list();
  out.models = models.data.map((m) => m.id);

  const c1 = await client.chat.completions.create({ model, messages: first, tools, temperature: 0 });
  out.finish1 = c1.choices[0].finish_reason;
  out.call = c1.choices[0].message.tool_calls[0];
  out.usage1 = c1.usage;

  const second = [...first, c1.choices[0].message,
    { role: 'tool', tool_call_id: out.call.id, content: process.env.RESPONSE }];
  const c2 = await client.chat.completions.create({ model, messages: second, tools, temperature: 0,
    logprobs: true, top_logprobs: 2 });
  out.finish2 = c2.choices[0].finish_reason;
  out.content2 = c2.choices[0].message.content;
  out.logprobTokens = c2.choices[0].logprobs.content.map((e) => e.token).join('');
  out.topCounts = c2.choices[0].logprobs.content.map((e) => e.top_logprobs.length);

  const stream = await client.chat.completions.create({ model, messages: first, tools, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  let args = '', name = '', finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      for (const tc of ch.delta.tool_calls || []) {
        if (tc.function.name) name += tc.function.name;
        args += tc.function.arguments || '';
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  out.stream = { name, args, finish, usage };

  try {
    await client.chat.completions.create({ model: 'no-such-model', messages: first });
    out.badModel = 'accepted';
  } catch (e) {
    out.badModel = { status: e.status, param: e.param, type: e.type };
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
