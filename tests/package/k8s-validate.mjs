// Validates Kubernetes manifests against the Kubernetes OpenAPI schemas as compiled by the npm
// package kubernetes-models (one ajv validator per apiVersion/kind), run from its install
// directory (tests/package/run installs it under build/k8s-cache/).
//   node k8s-validate.mjs FILE.yaml...      exit 0: every document valid; 1: any invalid or unknown
// What these schemas check: types, required fields, enums and formats; not unknown fields (the
// Kubernetes OpenAPI does not declare additionalProperties: false), which the API server drops.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = join(process.cwd(), "node_modules");
const yaml = await import(pathToFileURL(join(modules, "js-yaml", "dist", "js-yaml.mjs")));

let bad = 0;
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
      console.log(`${where}: valid (${doc.apiVersion})`);
    } catch (e) {
      console.log(`${where}: INVALID: ${e.message}`);
      bad++;
    }
  }
}
process.exit(bad ? 1 : 0);
