// Child process for the lock tests: takes the lock given in argv, says "locked", then waits to be killed.
import { acquireLock } from "../../../../cli/fetch/lock";

const [dir, heartbeatMs] = process.argv.slice(2);
const lock = await acquireLock(dir as string, { purpose: "lock test holder", heartbeatMs: Number(heartbeatMs ?? 5000) });
process.stdout.write(`locked ${lock.owner.pid}\n`);
process.on("SIGTERM", () => void lock.release().then(() => process.exit(0)));
setInterval(() => undefined, 1 << 30);
