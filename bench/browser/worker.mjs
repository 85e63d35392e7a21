// The case host in a dedicated (module) worker; messages as host.mjs's steps.
import { handlers } from './host.mjs';

globalThis.onmessage = async ({ data }) => {
  let reply;
  try {
    reply = await handlers[data.op](data);
  } catch (e) {
    reply = { status: 'error', reason: String(e?.message ?? e).split('\n')[0] };
  }
  globalThis.postMessage(reply);
};
