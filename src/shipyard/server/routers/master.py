from __future__ import annotations

from fastapi import APIRouter, Depends

import shipyard
from shipyard.common import api
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.services import jobs
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["master"])


@router.get("/master", operation_id="get_master", response_model=api.MasterInfo)
def get_master(m: MasterState = Depends(master)) -> api.MasterInfo:
    return api.MasterInfo(
        version=shipyard.__version__,
        started_at=m.started_at,
        database=m.db.dialect,
        home=str(m.settings.home),
        backend=", ".join(sorted({pool.type for pool in m.pools.values()})),
    )


@router.get(
    "/resource-pools", operation_id="list_resource_pools", response_model=list[api.PoolInfo]
)
def list_pools(m: MasterState = Depends(master)) -> list[api.PoolInfo]:
    """Each pool: its backend, slots used of total, scheduler, and whether its engine answers."""
    with m.db.read() as s:
        busy = jobs.busy_slots(session=s)
    pools = []
    for pool in m.pools.values():
        problem = m.backend.health_of(pool.name)
        pools.append(
            api.PoolInfo(
                name=pool.name,
                type=pool.type,
                description=pool.description,
                default=pool.name == m.default_pool,
                slots_total=len(pool.slots),
                slots_used=len(pool.slot_ids & busy),
                scheduler=pool.scheduler,
                preemption=pool.preemption,
                healthy=problem is None,
                problem=problem,
            )
        )
    return pools


@router.get("/slots", operation_id="list_slots", response_model=list[api.SlotInfo])
def list_slots(
    p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> list[api.SlotInfo]:
    """Every slot, and the trial holding it if it is one of a workspace you see."""
    with m.db.read() as s:
        holders = jobs.slot_holders(session=s)
    pool_of = {slot.id: pool.name for pool in m.pools.values() for slot in pool.slots}
    slots = []
    for slot in m.backend.capacity():
        trial_id, exp_id, ws = holders.get(slot.id, (None, None, None))
        shown = ws is not None and (p.sees is None or ws in p.sees)
        slots.append(
            api.SlotInfo(
                id=slot.id,
                kind=slot.kind,
                device=slot.device,
                pool=pool_of.get(slot.id),
                busy=ws is not None,
                trial_id=trial_id if shown else None,
                experiment_id=exp_id if shown else None,
            )
        )
    return slots
