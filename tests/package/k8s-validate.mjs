// Validates Kubernetes manifests in two passes, run from the directory where tests/package/run
// installed the npm packages (build/k8s-cache/):
//  1. the Kubernetes OpenAPI schemas as compiled by kubernetes-models (one ajv validator per
//     apiVersion/kind): types, required fields, enums, formats. They accept unknown fields (the
//     OpenAPI does not forbid them; the API server drops them, so a misspelt field is lost).
//  2. the same package's TypeScript interfaces, with each document as an object literal checked by
//     tsc: excess-property checking refuses any field the API does not have (hostPid, capabilites).
//   node k8s-validate.mjs FILE.yaml...      exit 0: every document valid; 1: any invalid or unknown
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { pathToFileURL } from "node:url";

const modules = join(process.cwd(), "node_modules");
const yaml = await import(pathToFileURL(join(modules, "js-yaml", "dist", "js-yaml.mjs")));

let bad = 0;
const typed = [];   // [where, apiVersion, kind, doc] of the documents that passed pass 1
for (const file of process.argv.slice(2)) {
  let docs;
  try {
    docs = yaml.loadAll(readFileSync(file, "utf8")).filter((d) => d !== null);
  } catch (e) {
    console.log(`${file}: not YAML: ${e.message}`);
    bad++;
    continue;
  }
  for (const doc of docs) {
    const where = `${file}: ${doc.kind}/${doc.metadata?.name}`;
    if (typeof doc.apiVersion !== "string" || typeof doc.kind !== "string") {
      console.log(`${where}: no apiVersion or kind`);
      bad++;
      continue;
    }
    // "v1" is the core group (kubernetes-models/v1/Kind), "apps/v1" is kubernetes-models/apps/v1/Kind.
    const path = join(modules, "kubernetes-models", ...doc.apiVersion.split("/"), `${doc.kind}.js`);
    let Model;
    try {
      Model = (await import(pathToFileURL(path)))[doc.kind];
    } catch (e) {
      console.log(`${where}: no schema for ${doc.apiVersion} ${doc.kind}`);
      bad++;
      continue;
    }
    try {
      new Model(doc).validate();
      typed.push([where, doc]);
    } catch (e) {
      console.log(`${where}: INVALID: ${e.message}`);
      bad++;
    }
  }
}
// Pass 2: one line per document, so that tsc's line numbers name the document.
if (typed.length) {
  const dir = mkdtempSync(join(process.cwd(), "tscheck-"));
  try {
    const lines = typed.map(([, doc], i) =>
      `import type { I${doc.kind} as T${i} } from "kubernetes-models/${doc.apiVersion}/${doc.kind}";`);
    const first = lines.length + 1;
    typed.forEach(([, doc], i) => lines.push(`export const d${i}: T${i} = ${JSON.stringify(doc)};`));
    writeFileSync(join(dir, "manifests.mts"), lines.join("\n") + "\n");
    const tsc = spawnSync(process.execPath, [join(modules, "typescript", "bin", "tsc"), "--noEmit", "--strict",
      "--module", "nodenext", "--moduleResolution", "nodenext", "--skipLibCheck", join(dir, "manifests.mts")],
      { encoding: "utf8" });
    const failed = new Set();
    for (const m of (tsc.stdout + tsc.stderr).matchAll(/manifests\.mts\((\d+),\d+\): (.*)/g)) {
      const i = Number(m[1]) - first;
      console.log(`${i >= 0 ? typed[i][0] : "import"}: INVALID: ${m[2]}`);
      failed.add(i);
    }
    if (tsc.status !== 0 && failed.size === 0) {
      console.log(`tsc exited ${tsc.status}:\n${tsc.stdout}${tsc.stderr}`);
      failed.add(-1);
    }
    bad += failed.size;
    typed.forEach(([where, doc], i) => failed.has(i) || console.log(`${where}: valid (${doc.apiVersion})`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
process.exit(bad ? 1 : 0);
