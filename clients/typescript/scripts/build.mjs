// Compiles src/ into dist/ (npm's `prepare`, so `npm install ./clients/typescript` builds the package).
//
// dist/ is build output and is not committed. npm runs `prepare` when it installs a package from a folder or
// a git checkout, but it does not install that package's devDependencies first: when TypeScript is not
// installed here (a fresh clone), npx fetches the version pinned in package.json for this one build.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const local = join(root, "node_modules", ".bin", process.platform === "win32" ? "tsc.cmd" : "tsc");
const options = { cwd: root, stdio: "inherit" };
try {
  if (existsSync(local)) {
    execFileSync(local, ["-p", "tsconfig.json"], options);
  } else {
    const { devDependencies } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    const npx = process.platform === "win32" ? "npx.cmd" : "npx";
    const tsc = ["--yes", "-p", `typescript@${devDependencies.typescript}`, "--", "tsc", "-p", "tsconfig.json"];
    execFileSync(npx, tsc, options);
  }
} catch {
  process.exit(1); // tsc has printed what is wrong
}
