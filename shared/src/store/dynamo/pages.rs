//! The reads of many records: an owner's page from the owner index, newest first, and a page
//! of the table's scan. `AgentStore::query_owner` and `scan_agents` in DynamoDB.

use super::*;

impl DynamoStore {
    pub(super) async fn owner_page(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<OwnerPage, StoreError> {
        let limit = limit.max(1) as usize;
        let mut start = cursor
            .map(|c| OwnerCursor::decode(c, owner_key))
            .transpose()?
            .map(|c| {
                HashMap::from([
                    (attr::PK.to_string(), s(&c.pk)),
                    (attr::SK.to_string(), s(&c.sk)),
                    (attr::GSI1PK.to_string(), s(&c.gsi1pk)),
                    (attr::GSI1SK.to_string(), s(&c.gsi1sk)),
                ])
            });
        let now = now_s();
        let mut records = Vec::new();
        let mut last_item: Option<Item> = None;
        let mut more = false;
        // Tombstones stay in the index until deleted, so a page may hold fewer live records than
        // asked: query on, one more than needed to know whether more follow. The cursor comes from
        // the last record returned, never `LastEvaluatedKey` (which may lie past it).
        'pages: loop {
            // At least a few dozen, so that a run of tombstones costs few round trips.
            let want = (limit - records.len() + 1).max(MIN_QUERY_LIMIT);
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(port::OWNER_INDEX)
                .key_condition_expression("#gsi1pk = :gsi1pk")
                .expression_attribute_names("#gsi1pk", attr::GSI1PK)
                .expression_attribute_values(":gsi1pk", s(&port::owner_gsi_pk(owner_key)))
                .scan_index_forward(false)
                .limit(i32::try_from(want).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable("Query", &e))?;
            if take_live(out.items(), now, limit, &mut records, |item| {
                last_item = Some(item.clone())
            })? {
                more = true;
                break 'pages;
            }
            match out.last_evaluated_key() {
                Some(lek) if !lek.is_empty() => start = Some(lek.clone()),
                _ => break,
            }
        }
        let cursor = match (more, last_item) {
            (true, Some(item)) => {
                let field = |name: &str| {
                    get_s(&item, name)?
                        .ok_or_else(|| StoreError::Corrupt(format!("index item without {name}")))
                };
                Some(
                    OwnerCursor {
                        pk: field(attr::PK)?,
                        sk: field(attr::SK)?,
                        gsi1pk: field(attr::GSI1PK)?,
                        gsi1sk: field(attr::GSI1SK)?,
                    }
                    .encode(),
                )
            }
            _ => None,
        };
        Ok(OwnerPage { records, cursor })
    }

    pub(super) async fn agent_page(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> Result<AgentPage, StoreError> {
        let limit = limit.max(1) as usize;
        let prefix = match kind {
            Some(k) => format!("AGENT#{k}#"),
            None => "AGENT#".to_string(),
        };
        let mut start = after.map(Self::agent_key_attrs);
        let now = now_s();
        let mut records = Vec::new();
        let mut more = false;
        // A Scan's `Limit` counts items before the filter drops the rest: read on until full.
        'pages: loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("begins_with(#pk, :prefix)")
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_values(":prefix", s(&prefix))
                .limit(
                    i32::try_from((limit - records.len() + 1).max(MIN_QUERY_LIMIT))
                        .unwrap_or(i32::MAX),
                )
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable("Scan", &e))?;
            if take_live(out.items(), now, limit, &mut records, |_| {})? {
                more = true;
                break 'pages;
            }
            match out.last_evaluated_key() {
                // A full page ends with its batch (the next page may then be empty).
                Some(lek) if !lek.is_empty() && records.len() == limit => {
                    more = true;
                    break;
                }
                Some(lek) if !lek.is_empty() => start = Some(lek.clone()),
                _ => break,
            }
        }
        let next = if more {
            records.last().map(|r: &AgentRecord| r.key.clone())
        } else {
            None
        };
        Ok(AgentPage { records, next })
    }
}
