# The image of quotascope's own services: the agent service (default command) and the mock
# provider (docker-compose.yml overrides the command). Node 24 runs the TypeScript sources
# directly with its type stripping, so there is no build step: production dependencies and
# the source folders the services import are all it needs.
FROM node:24.21.0-slim

ENV NODE_ENV=production \
    NODE_NO_WARNINGS=1
WORKDIR /app

# Dependencies first, so source edits reuse this layer. --ignore-scripts: no dependency
# needs an install script at run time; test/compose/compose.test.ts runs this same command.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

COPY cli ./cli
COPY shared ./shared
COPY instrumentation ./instrumentation
COPY agent ./agent
COPY mock-provider ./mock-provider
COPY loadtest ./loadtest
# `quotascope <command>` on PATH (the Helm chart's entry program); node strips the types.
RUN ln -s /app/cli/quotascope.ts /usr/local/bin/quotascope

# The base image's unprivileged user.
USER node
EXPOSE 8080 8090
CMD ["node", "cli/quotascope.ts", "agent"]
