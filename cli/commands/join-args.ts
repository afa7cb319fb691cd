// The arguments a join line carries, shared by `join` and `doctor --join`: the CA pin and the
// token (from the environment or --token-file, never from the command line).
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { opt, type Parsed } from "../args";
import type { Context } from "../context";
import { messageOf, UsageError } from "../errors";
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
  if (file !== undefined) {
    try {
      tokenText = file === "-" ? readFileSync(0, "utf8") : readFileSync(path.resolve(ctx.cwd, file), "utf8");
    } catch (e) {
      throw new UsageError(`--token-file ${file}: ${(e as NodeJS.ErrnoException).code ?? messageOf(e)}`, command);
    }
  } else tokenText = ctx.env[TOKEN_ENV];
  if (tokenText === undefined)
    throw new UsageError(`${who} needs the token: set ${TOKEN_ENV}=ID.SECRET (from the join line) or pass --token-file FILE`, command);
  const token = parseToken(tokenText);
  if (!token) throw new UsageError("the token is not ID.SECRET (6 and 16 characters of a-z and 0-9)", command);
  return { caHash, token };
}
