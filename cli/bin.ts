// The program's entry (bundled by scripts/bundle.mjs, run by the SEA binary and `npm run dev`).
import { main, reportError } from "./main";
import { createOutput } from "./ui/output";

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.exitCode = reportError(e, createOutput());
  },
);
