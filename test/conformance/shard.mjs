// Writes shard K of N of a conformance list, for a route too slow to run the whole list at once (the
// VM route under software emulation: make conformance E2E_CONFORMANCE_SHARD=K/N):
//
//   node shard.mjs --list focus.txt --shard 2/5 --out DIR
//
// DIR/list.txt: the shard's names (a line each, with a comment naming the list and the shard), what
// the summary counts; DIR/list.focus: the ginkgo regular expression that runs exactly them. Exit 2
// on bad usage or a bad shard.
import { writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { focusRegex, readNames, shardOf } from "./lists.mjs";

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { list: { type: "string" }, shard: { type: "string" }, out: { type: "string" } } });
  if (!values.list || !values.shard || !values.out) {
    console.error("usage: shard.mjs --list LIST.txt --shard K/N --out DIR");
    process.exit(2);
  }
  let names;
  try {
    names = shardOf(readNames(values.list), values.shard);
  } catch (e) {
    console.error(`shard.mjs: ${e.message}`);
    process.exit(2);
  }
  writeFileSync(
    join(values.out, "list.txt"),
    `# shard ${values.shard} of ${basename(values.list)}: ${names.length} tests\n${names.join("\n")}\n`,
  );
  writeFileSync(join(values.out, "list.focus"), focusRegex(names));
  console.log(`shard ${values.shard} of ${basename(values.list)}: ${names.length} tests`);
}
