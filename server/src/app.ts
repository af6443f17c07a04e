// Builds the application from configuration and dependencies: the services (services.ts) and the
// HTTP layer over them (http/app.ts). Never listens itself.
import type express from 'express';
import type { Config } from './config.js';
import { createHttpApp } from './http/app.js';
import { createServices, type ServiceDeps, type Services } from './services.js';

export type AppDeps = ServiceDeps;

export interface App extends Services {
  app: express.Express;
  /** Resolves when the connections the app opens by itself (Redis) are up. */
  ready(): Promise<void>;
}

export function createApp(config: Config, deps: AppDeps): App {
  const services = createServices(config, deps);
  const app = createHttpApp(services, config);
  return {
    ...services,
    app,
    ready: () => services.limits.ready(),
    startBackground: async () => {
      await services.limits.ready();
      await services.startBackground();
    },
  };
}
