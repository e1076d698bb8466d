// Generates src/schema.gen.ts, the SDK's request and answer types, from the
// OpenAPI document the dashboard serves (../go/openapi.json, which
// `make generate` refreshes). With --check it generates into a temporary file
// instead and fails when the committed file differs, as CI does.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const input = join(root, "..", "go", "openapi.json");
const committed = join(root, "src", "schema.gen.ts");

function generate(output) {
  execFileSync(
    process.execPath,
    [
      join(root, "node_modules", "openapi-typescript", "bin", "cli.js"),
      input,
      "--output", output,
      // A field with a default is optional in a request: the server fills it in.
      "--default-non-nullable=false",
      // An object schema without properties (a job type's example payload) is
      // any object, not an empty one.
      "--empty-objects-unknown",
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
}

if (!process.argv.includes("--check")) {
  generate(committed);
  console.log("wrote src/schema.gen.ts from ../go/openapi.json");
} else {
  const dir = mkdtempSync(join(tmpdir(), "tock-schema-"));
  try {
    const fresh = join(dir, "schema.gen.ts");
    generate(fresh);
    if (readFileSync(fresh, "utf8") !== readFileSync(committed, "utf8")) {
      console.error(
        "sdk/typescript/src/schema.gen.ts is not what ../go/openapi.json generates.\n" +
          "Run `npm run generate` in sdk/typescript (after `make generate`, which refreshes\n" +
          "sdk/go/openapi.json) and commit the result.",
      );
      process.exitCode = 1;
    } else {
      console.log("src/schema.gen.ts matches ../go/openapi.json");
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
