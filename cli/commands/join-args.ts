// The arguments a join line carries, shared by `join` and `doctor --join`: the CA pin and the
// token (from the environment or --token-file, never from the command line).
import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { opt, type Parsed } from "../args";
import type { Context } from "../context";
import { ExitCode, messageOf, UsageError, UserError } from "../errors";
import { FileTooLargeError, readSmallFdSync } from "../small-file";
import { shQuote } from "../render/scripts";
import { type BootstrapToken, parseCaHash, parseToken } from "../host/parse/bootstrap-token";
import { TOKEN_ENV } from "../render/join";

/** --ca-hash and the token, checked; `who` names the asking flag or command in each error ("join", "--join"). */
export function joinCredentials(ctx: Context, parsed: Parsed, command: string, who: string): { caHash: string; token: BootstrapToken } {
  const hashText = opt.str(parsed, "ca-hash");
  if (hashText === undefined) throw new UsageError(`${who} needs --ca-hash sha256:HASH (from the join line)`, command);
  const caHash = parseCaHash(hashText);
  if (!caHash) throw new UsageError(`--ca-hash "${hashText}" is not sha256: and 64 hex digits`, command);
  const file = opt.str(parsed, "token-file");
  let tokenText: string | undefined;
  if (file === "-") {
    try {
      tokenText = readFileSync(0, "utf8");
    } catch (e) {
      throw new UsageError(`--token-file ${file}: ${(e as NodeJS.ErrnoException).code ?? messageOf(e)}`, command);
    }
  } else if (file !== undefined) tokenText = readTokenFile(path.resolve(ctx.cwd, file), file, command);
  else tokenText = ctx.env[TOKEN_ENV];
  if (tokenText === undefined)
    throw new UsageError(`${who} needs the token: set ${TOKEN_ENV}=ID.SECRET (from the join line) or pass --token-file FILE`, command);
  const token = parseToken(tokenText);
  if (!token) throw new UsageError("the token is not ID.SECRET (6 and 16 characters of a-z and 0-9)", command);
  return { caHash, token };
}

/** A token file holds ID.SECRET and a newline: anything longer is not one. */
const TOKEN_FILE_MAX = 4096;

/**
 * The text of the token file at `file` (`given` as typed). A regular file its group or others may
 * read is refused (exit 2, with the chmod that fixes it): the token is a secret that gets any host
 * a kubelet certificate of the cluster. Mode and content come from one open handle. A pipe
 * (`--token-file <(...)`) is no file at rest and is read as it is.
 */
function readTokenFile(file: string, given: string, command: string): string {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (e) {
    throw new UsageError(`--token-file ${given}: ${(e as NodeJS.ErrnoException).code ?? messageOf(e)}`, command);
  }
  try {
    const st = fstatSync(fd);
    if (st.isFile() && st.mode & 0o044) {
      const who = st.mode & 0o004 ? "anyone" : "its group";
      throw new UserError(
        `--token-file ${given}: ${who} may read it (mode ${(st.mode & 0o7777).toString(8).padStart(4, "0")}), and a join token is a secret`,
        { exitCode: ExitCode.Usage, fix: `chmod 600 ${shQuote(file)}` },
      );
    }
    return readSmallFdSync(fd, TOKEN_FILE_MAX, file);
  } catch (e) {
    if (e instanceof UserError) throw e;
    if (e instanceof FileTooLargeError)
      throw new UsageError(`--token-file ${given} is longer than a token (${TOKEN_FILE_MAX} bytes)`, command);
    throw new UsageError(`--token-file ${given}: ${(e as NodeJS.ErrnoException).code ?? messageOf(e)}`, command);
  } finally {
    closeSync(fd);
  }
}
