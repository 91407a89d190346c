// Grafana provisioning for the datasource (fixed uid) and the dashboard provider.
import { grafana } from '../config.ts';

export function datasourceProvisioning() {
  return {
    apiVersion: 1,
    datasources: [
      {
        name: grafana.datasourceName,
        uid: grafana.datasourceUid,
        type: 'prometheus',
        access: 'proxy',
        orgId: 1,
        url: grafana.datasourceUrl,
        isDefault: true,
        editable: false,
        jsonData: {
          httpMethod: 'POST',
          // Feeds $__rate_interval: Grafana needs the scrape interval to pick a safe window.
          timeInterval: grafana.scrapeInterval,
          prometheusType: 'Prometheus',
        },
      },
    ],
  };
}

export function dashboardProviderProvisioning() {
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
