"""What a BTCPay Server API key may do, from its permission list, against what the node needs:
scoped and unscoped permissions, and policies that include others (BTCPayServerServices)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edge.providers.btcpay import permissions as p

STORE = "StoreA"
VIEW = "btcpay.store.canviewinvoices"
CREATE = "btcpay.store.cancreateinvoice"
REFUND = "btcpay.store.cancreatenonapprovedpullpayments"


def test_modifying_the_store_includes_everything_the_node_does():
    assert p.missing([f"btcpay.store.canmodifystoresettings:{STORE}"], STORE) == []
    assert p.missing(["btcpay.store.canmodifystoresettings"], STORE) == []  # every store
    assert p.missing(["unrestricted"], STORE) == []


def test_a_permission_of_another_store_grants_nothing_here():
    assert p.missing([f"btcpay.store.canmodifystoresettings:{STORE}"], "StoreB") == [
        CREATE,
        VIEW,
        REFUND,
    ]
    assert p.stores_named([f"{CREATE}:{STORE}", f"{VIEW}:{STORE}", "x:B"]) == [STORE, "B"]


def test_policies_include_their_children():
    assert p.missing([f"btcpay.store.canmodifyinvoices:{STORE}"], STORE) == [REFUND]
    assert p.missing([f"btcpay.store.canmanagepullpayments:{STORE}"], STORE) == [CREATE, VIEW]
    assert p.missing([f"{CREATE}:{STORE}"], STORE) == [VIEW, REFUND]
    # viewing the store's settings includes viewing invoices, not creating them
    assert p.missing([f"btcpay.store.canviewstoresettings:{STORE}"], STORE) == [CREATE, REFUND]


@given(st.lists(st.sampled_from([*p.INCLUDES, *p.NEEDED, "unrestricted", 3, None]), max_size=6))
def test_more_permissions_never_lack_more(listed):
    fewer = p.missing(listed, STORE)
    more = p.missing([*listed, f"{CREATE}:{STORE}"], STORE)
    assert set(more) <= set(fewer)
    assert set(fewer) <= set(p.NEEDED)
