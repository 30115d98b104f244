# syntax=docker/dockerfile:1
# The production image: `docker build -t mailstream .`, then `docker run mailstream <role>` with role
# `all` (the default), `api`, `worker` or `migrate` (see docker-compose.yml). Node 24 runs the
# service compiled into dist/ (scripts/build.ts): JavaScript, no TypeScript stripping at run time.

# Build stage: every dependency, for what has to be built before it ships: the service (src/, bundled
# into dist/) and the web dashboard (web/, built into web/dist), both copied into the runtime stage.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --loglevel=warn
COPY . .
RUN node scripts/build.ts --force

# Runtime stage: production dependencies only, the compiled service and migrations, Node from the base image.
FROM node:24-bookworm-slim AS runtime
# tini as PID 1: forwards SIGTERM/SIGINT to node (graceful shutdown) and reaps zombies.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# No production dependency has an install script; --ignore-scripts keeps it that way.
RUN npm ci --omit=dev --ignore-scripts --loglevel=warn && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/migrations ./migrations
COPY --from=build /app/web/dist ./web/dist
# The file outbox (used when SMTP_URL is unset) is the only place the app writes; the node user owns it.
RUN mkdir -p .data/outbox && chown -R node:node .data
USER node
EXPOSE 3000
# Ready = this process reaches Postgres and NATS (/readyz answers 503 otherwise). A worker serves no
# HTTP on PORT: docker-compose.yml gives workers their own check on METRICS_PORT.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["tini", "--", "node", "dist/main.js"]
CMD ["all"]
