// Verifies webhook deliveries with the official filestack-js SDK's own function.
// stdin: JSON list of {secret, body, timestamp, signature}; stdout: JSON list of booleans.
// Usage: node verify.js <folder holding node_modules/filestack-js>
const path = require("path");
const { validateWebhookSignature } = require(
  path.resolve(process.argv[2], "node_modules", "filestack-js"),
);

let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const results = JSON.parse(input).map((d) =>
    validateWebhookSignature(d.secret, d.body, { signature: d.signature, timestamp: d.timestamp }),
  );
  process.stdout.write(JSON.stringify(results));
});
