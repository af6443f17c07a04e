/* global pm -- the Postman sandbox, where newman runs this before the request */
// The split to promote: the split request's candidate, sent a share again (the request before
// this one ended the split).
pm.sendRequest({
  url: pm.variables.get('baseUrl') + '/api/v1/agents/' + pm.variables.get('splitAgent') + '/split',
  method: 'PUT',
  header: { 'tenant-id': pm.variables.get('apiKey'), 'content-type': 'application/json' },
  body: { mode: 'raw', raw: JSON.stringify({ version: Number(pm.variables.get('candidateVersion')), percent: 50 }) },
}, (err, res) => {
  if (err || res.code !== 200) throw new Error('could not start the split: ' + (err || res.code));
});
