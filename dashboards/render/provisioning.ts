// Grafana provisioning for the datasource (fixed uid) and the dashboard provider.
import type { DashboardsConfig } from '../config.ts';

export function datasourceProvisioning(config: DashboardsConfig) {
  const ds = config.datasource;
  return {
    apiVersion: 1,
    datasources: [
      {
        name: ds.name,
        uid: ds.uid,
        type: 'prometheus',
        access: 'proxy',
        orgId: 1,
        url: ds.url,
        // Not the default: in a user's Grafana that would take over their own default datasource
        // (the dashboards and rules name this one by uid).
        isDefault: false,
        editable: false,
        jsonData: {
          httpMethod: 'POST',
          // Feeds $__rate_interval: Grafana needs the scrape interval to pick a safe window.
          timeInterval: ds.scrapeInterval,
          prometheusType: 'Prometheus',
        },
      },
    ],
  };
}

export function dashboardProviderProvisioning(config: DashboardsConfig) {
  const grafana = config.grafana;
  return {
    apiVersion: 1,
    providers: [
      {
        name: 'quotascope',
        orgId: 1,
        folder: grafana.folderTitle,
        folderUid: grafana.folderUid,
        type: 'file',
        disableDeletion: true,
        editable: false,
        allowUiUpdates: false,
        updateIntervalSeconds: 30,
        options: { path: grafana.dashboardsPath, foldersFromFilesStructure: false },
      },
    ],
  };
}
