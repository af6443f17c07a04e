/* global pm -- the Postman sandbox, where newman runs this before the request */
// A candidate for the split: the split agent's definition stored again as a new version that is
// not current (its description marked, so that it differs), whose number the split request sends.
const base = pm.variables.get('baseUrl') + '/api/v1/agents/' + pm.variables.get('splitAgent');
const header = { 'tenant-id': pm.variables.get('apiKey'), 'content-type': 'application/json' };
pm.sendRequest({ url: base, method: 'GET', header }, (err, res) => {
  if (err || res.code !== 200) throw new Error('could not read the split agent: ' + (err || res.code));
  const definition = res.json().definition;
  definition.description = definition.description.replace(/ \(candidate \d+\)$/, '') + ' (candidate ' + Date.now() + ')';
  pm.sendRequest({ url: base + '?activate=false', method: 'PUT', header, body: { mode: 'raw', raw: JSON.stringify(definition) } }, (err2, res2) => {
    if (err2 || res2.code !== 200) throw new Error('could not store a candidate version: ' + (err2 || res2.code));
    pm.collectionVariables.set('candidateVersion', res2.json().stored_version);
  });
});
