/**
 * docker-compose.yml and deploy/Caddyfile, checked by their own tools without a Docker engine:
 * Debian's docker-compose resolves and validates the file (schema, depends_on, volumes) with `config`,
 * Debian's caddy adapts the Caddyfile. Both are installed when missing (root only), like Postgres and NATS.
 */
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { promisify } from "node:util"
import { beforeAll, describe, expect, it } from "vitest"
import { parse } from "yaml"
import { ensureDebianTool } from "./debian.ts"

const ROOT = new URL("../../", import.meta.url).pathname
const run = promisify(execFile)

interface Service {
  readonly image?: string
  readonly build?: { readonly context: string }
  readonly command?: ReadonlyArray<string>
  readonly environment?: Record<string, string | null>
  readonly ports?: ReadonlyArray<{ readonly published: number; readonly target: number }>
  readonly expose?: ReadonlyArray<string>
  readonly volumes?: ReadonlyArray<string>
  readonly depends_on?: Record<string, { readonly condition: string }>
  readonly healthcheck?: { readonly test: ReadonlyArray<string> }
  readonly restart?: string
  readonly container_name?: string
  readonly networks?: Record<string, unknown>
  readonly profiles?: ReadonlyArray<string>
}

let dockerCompose: string
let caddy: string

/** The file as docker-compose resolves it, for the given shell environment (none: resolved once). */
let plain: Promise<Resolved> | undefined
const resolved = (env?: Record<string, string>, profiles: ReadonlyArray<string> = []): Promise<Resolved> =>
  env || profiles.length > 0 ? resolve(env ?? {}, profiles) : (plain ??= resolve({}))
type Resolved = {
  services: Record<string, Service>
  volumes: Record<string, unknown>
  networks: Record<string, { readonly ipam?: { readonly config: ReadonlyArray<{ readonly subnet: string }> } }>
}
const resolve = async (env: Record<string, string>, profiles: ReadonlyArray<string> = []) => {
  const { stdout } = await run(dockerCompose, [
    "-f",
    "docker-compose.yml",
    ...profiles.flatMap((profile) => ["--profile", profile]),
    "config"
  ], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env }
  })
  return parse(stdout) as Resolved
}

beforeAll(async () => {
  dockerCompose = await ensureDebianTool("docker-compose", "docker-compose")
  caddy = await ensureDebianTool("caddy", "caddy")
}, 300_000)

describe("docker-compose.yml", () => {
  it("is valid for docker-compose: schema, every depends_on and named volume resolves", async () => {
    const { services, volumes } = await resolved()
    expect(Object.keys(services).sort()).toEqual([
      "api",
      "inbound",
      "migrate",
      "nats",
      "nats-1",
      "nats-2",
      "nats-3",
      "postgres",
      "proxy",
      "worker"
    ])
    // A plain `up` starts one NATS node; the three of the cluster only with `--profile cluster`, the inbound
    // SMTP receiver only with `--profile inbound`.
    const profiled = Object.entries(services).filter(([, service]) => service.profiles !== undefined)
    expect(Object.fromEntries(profiled.map(([name, service]) => [name, service.profiles]))).toEqual({
      inbound: ["inbound"],
      "nats-1": ["cluster"],
      "nats-2": ["cluster"],
      "nats-3": ["cluster"]
    })
    expect(Object.keys(volumes).sort()).toEqual(["caddy_data", "natsdata", "natsdata1", "natsdata2", "natsdata3", "outbox", "pgdata"])
  })

  it("has a cluster profile: three JetStream nodes routed to each other, each on its own volume", async () => {
    const env = { NATS_URL: "nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222", NATS_REPLICAS: "3" }
    const { services } = await resolved(env, ["cluster"])
    const routes = "nats://nats-1:6222,nats://nats-2:6222,nats://nats-3:6222"
    for (const n of [1, 2, 3]) {
      const node = services[`nats-${n}`]!
      expect(node.command).toEqual([
        "-js",
        "-sd",
        "/data",
        "-m",
        "8222",
        "-n",
        `nats-${n}`,
        "--cluster_name",
        "mailstream",
        "--cluster",
        "nats://0.0.0.0:6222",
        "--routes",
        routes
      ])
      expect(node.volumes).toContain(`natsdata${n}:/data:rw`)
      expect(node.healthcheck!.test).toContain("http://127.0.0.1:8222/healthz")
      expect(node.ports, `nats-${n}`).toBeUndefined()
    }
    for (const role of ["migrate", "api", "worker"]) expect(services[role]!.environment).toMatchObject(env)
  })

  it("runs the image's roles: a one-shot migrate, then api and worker once it succeeded and both stores are healthy", async () => {
    const { services } = await resolved()
    for (const role of ["migrate", "api", "worker"]) {
      expect(services[role]!.build?.context.replace(/\/$/, "")).toBe(ROOT.replace(/\/$/, ""))
      expect(services[role]!.command).toEqual([role])
    }
    expect(services.migrate!.restart).toBe("no")
    expect(services.migrate!.depends_on).toEqual({ postgres: { condition: "service_healthy" } })
    for (const role of ["api", "worker"]) {
      expect(services[role]!.depends_on).toEqual({
        migrate: { condition: "service_completed_successfully" },
        postgres: { condition: "service_healthy" },
        nats: { condition: "service_healthy" }
      })
    }
  })

  it("lets api and worker scale: no container names, and no host port but the proxy's", async () => {
    const { services } = await resolved()
    for (const [name, service] of Object.entries(services)) {
      expect(service.container_name, name).toBeUndefined()
      if (name !== "proxy" && name !== "inbound") expect(service.ports, name).toBeUndefined()
    }
    expect(services.proxy!.ports).toEqual([{ published: 3000, target: 3000 }])
    expect((await resolved({ HTTP_PORT: "8080" })).services.proxy!.ports).toEqual([{ published: 8080, target: 3000 }])
    expect(services.api!.expose).toEqual(["3000", "9464"])
    expect(services.api!.environment!.PORT).toBe("3000")
  })

  it("runs inbound mail only with --profile inbound: one api-role replica with the SMTP receiver, its port published", async () => {
    const { services } = await resolved()
    const inbound = services.inbound! as Service & { readonly profiles?: ReadonlyArray<string> }
    expect(inbound.profiles).toEqual(["inbound"])
    expect(inbound.command).toEqual(["api"])
    expect(inbound.environment!.INBOUND_SMTP_PORT).toBe("2525")
    expect(inbound.environment!.INBOUND_MAX_BYTES).toBeNull()
    expect(inbound.ports).toEqual([{ published: 25, target: 2525 }])
    expect((await resolved({ INBOUND_SMTP_HOST_PORT: "2525" })).services.inbound!.ports).toEqual([{ published: 2525, target: 2525 }])
    // The HTTP api replicas never bind it, so they scale freely.
    expect(services.api!.environment!.INBOUND_SMTP_PORT).toBeUndefined()
    expect(inbound.depends_on).toEqual(services.api!.depends_on)
  })

  it("keeps Postgres and the JetStream file store on volumes, with health checks", async () => {
    const { services } = await resolved()
    expect(services.postgres!.volumes).toContain("pgdata:/var/lib/postgresql/data:rw")
    expect(services.postgres!.healthcheck!.test.join(" ")).toContain("pg_isready")
    // Room for the connection pools of many replicas (20 each), not Postgres' default 100.
    expect(services.postgres!.command).toEqual(["postgres", "-c", "max_connections=300"])
    const nats = services.nats!
    expect(nats.command).toEqual(["-js", "-sd", "/data", "-m", "8222"])
    expect(nats.volumes).toContain("natsdata:/data:rw")
    expect(nats.healthcheck!.test).toContain("http://127.0.0.1:8222/healthz")
  })

  it("gives every mailstream process the same stores and the same fixed settings", async () => {
    const { services } = await resolved({ PARTITIONS: "16", LANES_PER_PROJECT: "4", SMTP_URL: "smtp://relay:587" })
    const roles = ["migrate", "api", "worker", "inbound"].map((role) => services[role]!.environment!)
    for (const environment of roles) {
      expect(environment).toMatchObject({
        DATABASE_URL: "postgres://postgres:postgres@postgres:5432/postgres",
        NATS_URL: "nats://nats:4222",
        NATS_REPLICAS: null,
        PUBLIC_URL: "http://localhost:3000",
        PARTITIONS: "16",
        LANES_PER_PROJECT: "4",
        SMTP_URL: "smtp://relay:587"
      })
    }
    // Unset in the shell, optional settings stay unset (the app's defaults apply), never empty strings.
    expect((await resolved()).services.api!.environment!.SMTP_URL).toBeNull()
    expect(services.worker!.environment!.METRICS_PORT).toBe("9464")
  })

  it("serves /metrics off the port Caddy proxies: on 9464 inside the network, a token passed through when set", async () => {
    const { services } = await resolved()
    for (const role of ["api", "worker"]) {
      expect(services[role]!.environment!.METRICS_PORT, role).toBe("9464")
      expect(services[role]!.expose, role).toContain("9464")
      expect(services[role]!.environment!.METRICS_TOKEN, role).toBeNull()
    }
    expect(services.api!.environment!.PORT).toBe("3000")
    expect((await resolved({ METRICS_TOKEN: "t0ken-from-the-shell-123" })).services.api!.environment!.METRICS_TOKEN).toBe(
      "t0ken-from-the-shell-123"
    )
    // The worker's health check does not need the token.
    expect(services.worker!.healthcheck!.test.join(" ")).toContain("http://127.0.0.1:9464/healthz")
  })

  it("has the api believe X-Forwarded-For from Caddy's network only, a range of Caddy and the api alone", async () => {
    const subnetOf = (resolved: Resolved) => resolved.networks.edge!.ipam!.config.map((entry) => entry.subnet)
    const plain = await resolved()
    expect(Object.keys(plain.services.proxy!.networks!)).toEqual(["edge"])
    expect(Object.keys(plain.services.api!.networks!).sort()).toEqual(["default", "edge"])
    for (const name of ["postgres", "nats", "migrate", "worker"])
      expect(Object.keys(plain.services[name]!.networks ?? { default: null }), name).toEqual(["default"])
    expect(subnetOf(plain)).toEqual(["172.30.253.0/24"])
    expect(plain.services.api!.environment!.TRUSTED_PROXIES).toBe("172.30.253.0/24")
    // One setting moves both.
    const moved = await resolved({ PROXY_SUBNET: "10.99.0.0/24" })
    expect(subnetOf(moved)).toEqual(["10.99.0.0/24"])
    expect(moved.services.api!.environment!.TRUSTED_PROXIES).toBe("10.99.0.0/24")
  })

  it("puts Caddy in front of the api with the repository's Caddyfile", async () => {
    const { services } = await resolved()
    expect(services.proxy!.image).toBe("caddy:2")
    expect(services.proxy!.depends_on).toEqual({ api: { condition: "service_started" } })
    const mount = services.proxy!.volumes!.find((volume) => volume.includes(":/etc/caddy/Caddyfile"))!
    expect(existsSync(mount.split(":")[0]!)).toBe(true)
    expect(mount.split(":")[0]).toBe(`${ROOT}deploy/Caddyfile`)
  })
})

describe("deploy/Caddyfile", () => {
  it("adapts to a round-robin reverse proxy on :3000 over every api replica Docker's DNS names", async () => {
    const { stdout } = await run(caddy, ["adapt", "--config", "deploy/Caddyfile", "--adapter", "caddyfile", "--validate"], { cwd: ROOT })
    const config = JSON.parse(stdout)
    const server = config.apps.http.servers.srv0
    expect(server.listen).toEqual([":3000"])
    const [proxy] = server.routes[0].handle
    expect(proxy).toMatchObject({
      handler: "reverse_proxy",
      dynamic_upstreams: { source: "a", name: "api", port: "3000" },
      load_balancing: { selection_policy: { policy: "round_robin" } }
    })
    // A stopping replica's refused connections are retried on the others.
    expect(proxy.load_balancing.try_duration).toBeGreaterThan(0)
  })
})
