/**
 * SNS messages for tests of /webhooks/ses: a self-signed certificate (the service pins it with
 * SNS_SIGNING_CERT_FILE) and messages signed with its key over the canonical string of the SNS docs.
 */
import { execFileSync } from "node:child_process"
import { createSign } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export const makeSnsSigner = () => {
  const certDir = mkdtempSync(join(tmpdir(), "sns-"))
  execFileSync("openssl", [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=sns.test",
    "-days",
    "2",
    "-keyout",
    join(certDir, "key.pem"),
    "-out",
    join(certDir, "cert.pem")
  ], { stdio: "ignore" })
  const key = readFileSync(join(certDir, "key.pem"), "utf8")
  /** An SNS message signed with the certificate's key; a given Signature is kept (forgeries). */
  const signedSns = (fields: Record<string, string>) => {
    const message: Record<string, string> = {
      Timestamp: new Date().toISOString(),
      SignatureVersion: "2",
      SigningCertURL: "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-abc.pem",
      ...fields
    }
    const keys = message.Type === "Notification"
      ? ["Message", "MessageId", "Timestamp", "TopicArn", "Type"]
      : ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
    const canonical = keys.map((name) => `${name}\n${message[name]}\n`).join("")
    message.Signature ??= createSign("RSA-SHA256").update(canonical).sign(key, "base64")
    return message
  }
  return { certFile: join(certDir, "cert.pem"), signedSns }
}
