"""Pull payments and their payouts as BTCPay keeps them: a refund offered, claimed by the buyer,
approved, paid out or cancelled, and archived by the store.

The rules follow ``PullPaymentHostedService`` (btcpayserver@03345c28 BTCPayServer/
HostedServices/PullPaymentHostedService.cs):
- a claim (``HandleCreatePayout``, :621-792) makes a payout ``AwaitingApproval`` of what is left
  of the pull payment (or of the amount asked, refused past it: ``Overdraft``), published as
  ``PayoutCreated``; a pull payment that approves its claims (``autoApproveClaims``, the crypto
  refund variants) approves it at once;
- approval (``HandleApproval``, :505-574) moves it to ``AwaitingPayment`` with its
  ``payoutAmount`` in BTC (``originalAmount`` / rate, rounded up to 8 decimals; rate 1 when the
  pull payment is in BTC), published as ``PayoutApproved``;
- marking it paid (``HandleMarkPaid``, :576-619) moves an ``AwaitingPayment`` or ``InProgress``
  payout to ``Completed`` with its proof, published as ``PayoutUpdated``;
- cancelling (``HandleCancel``, :794-858) cancels every payout not ``Completed`` nor
  ``InProgress``, each published as ``PayoutUpdated``; archiving a pull payment does that to
  all its payouts and sets ``archived``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Any

from edge.domain.money import EXPONENTS
from edge.sim.btcpay import objects
from edge.sim.btcpay.errors import GreenfieldError

# (BTCPay webhook type, the payout as it was when the event was published)
Published = list[tuple[str, dict[str, Any]]]
BTC_PLACES = Decimal("0.00000001")


@dataclass
class PullPayment:
    """One pull payment of a store: its ``PullPaymentData``, the invoice it refunds (BTCPay's
    ``RefundData``), the payout methods it is paid by, its payouts by id."""

    data: dict[str, Any]
    store_id: str
    invoice_id: str | None
    payout_methods: list[str]
    payouts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return str(self.data["id"])

    def left(self) -> Decimal:
        """What is left to claim: its amount less the payouts not cancelled."""
        claimed = sum(
            (
                Decimal(p["originalAmount"])
                for p in self.payouts.values()
                if p["state"] != "Cancelled"
            ),
            Decimal(0),
        )
        return Decimal(self.data["amount"]) - claimed

    def claim(self, amount: Decimal | None, now_s: int, rate: Decimal) -> tuple[str, Published]:
        """The buyer claims ``amount`` (what is left when None) to an address of theirs."""
        if self.data["archived"]:
            raise GreenfieldError(
                400, "archived", "You cannot claim a payout from an archived pull payment"
            )
        claimed = self.left() if amount is None else amount
        if claimed <= 0 or claimed > self.left():
            raise GreenfieldError(
                400, "overdraft", "The payout amount overdraft the pull payment's limit"
            )
        payout = objects.payout(
            payout_id=objects.btcpay_id(28),
            pull_payment_id=self.id,
            date_s=now_s,
            original_amount=str(claimed),
            original_currency=str(self.data["currency"]),
            destination=objects.address(),
            payout_method_id=self.payout_methods[0],
        )
        self.payouts[payout["id"]] = payout
        published: Published = [("PayoutCreated", dict(payout))]
        if self.data["autoApproveClaims"]:
            published += self.approve(payout["id"], rate)
        return payout["id"], published

    def approve(self, payout_id: str, rate: Decimal) -> Published:
        payout = self._payout(payout_id)
        if payout["state"] != "AwaitingApproval":
            raise GreenfieldError(
                400, "invalid-state", "The payout is not in a state that can be approved"
            )
        per_btc = Decimal(1) if self.data["currency"] == "BTC" else rate
        crypto = (Decimal(payout["originalAmount"]) / per_btc).quantize(BTC_PLACES, ROUND_CEILING)
        payout.update(state="AwaitingPayment", payoutAmount=str(crypto))
        return [("PayoutApproved", dict(payout))]

    def complete(self, payout_id: str, rate: Decimal) -> Published:
        """Paid out on chain (approved first if it was waiting for approval)."""
        payout = self._payout(payout_id)
        published = self.approve(payout_id, rate) if payout["state"] == "AwaitingApproval" else []
        if payout["state"] not in ("AwaitingPayment", "InProgress"):
            raise GreenfieldError(
                400,
                "invalid-state",
                "The payout is not in a state that can be marked with the specified state",
            )
        payout.update(state="Completed", paymentProof=objects.onchain_proof())
        return [*published, ("PayoutUpdated", dict(payout))]

    def cancel(self, payout_id: str) -> Published:
        payout = self._payout(payout_id)
        if payout["state"] in ("Completed", "InProgress", "Cancelled"):
            return []
        payout["state"] = "Cancelled"
        return [("PayoutUpdated", dict(payout))]

    def archive(self) -> Published:
        self.data["archived"] = True
        return [event for payout_id in list(self.payouts) for event in self.cancel(payout_id)]

    def _payout(self, payout_id: str) -> dict[str, Any]:
        payout = self.payouts.get(payout_id)
        if payout is None:
            raise GreenfieldError(404, "payout-not-found", "The payout was not found")
        return payout


@dataclass(frozen=True)
class Terms:
    """What a refund's pull payment holds: its currency, amount (a decimal string), whether it
    approves its claims, and the payout methods it is paid by."""

    currency: str
    amount: str
    auto_approve: bool
    payout_methods: list[str]


REFUNDABLE_EXPIRED = ("PaidLate", "PaidOver", "PaidPartial")
PAYOUT_METHODS = ("BTC-CHAIN",)  # the simulated store pays out on chain only


def can_refund(status: str, additional: str) -> bool:
    """``InvoiceState.CanRefund`` (BTCPayServer/Services/Invoices/InvoiceEntity.cs:824-832):
    Settled or Invalid, or Expired with money paid (late, over, or part)."""
    return status in ("Settled", "Invalid") or (
        status == "Expired" and additional in REFUNDABLE_EXPIRED
    )


def refund_terms(
    body: dict[str, Any],
    *,
    currency: str,
    places: int,
    crypto_paid: Decimal,
    rate: Decimal,
    payout_methods_array: bool,
) -> Terms:
    """The pull payment ``RefundInvoice`` makes for ``body`` (a ``RefundInvoiceRequest``), as
    GreenfieldInvoiceController.cs:321-511 computes it, for an invoice in ``currency``
    (``places`` decimals) paid ``crypto_paid`` BTC at ``rate``; ``GreenfieldError`` (422 on the
    C# property's name) where BTCPay refuses. ``payout_methods_array``: the server reads
    ``payoutMethods`` (v2.4.1 on) before the deprecated ``payoutMethodId``."""
    methods = _payout_methods(body, payout_methods_array)
    variant = body.get("refundVariant")
    if variant is None:
        raise GreenfieldError(422, "", "`refundVariant` is mandatory", "RefundVariant")
    if variant != "Custom":
        for name in ("CustomAmount", "CustomCurrency"):
            if body.get(name[0].lower() + name[1:]) is not None:
                message = f"{name} should only be set if the refundVariant is Custom"
                raise GreenfieldError(422, "", message, name)
    subtract = _decimal(body.get("subtractPercentage", "0")) or Decimal(0)
    if not 0 <= subtract <= 100:
        raise GreenfieldError(
            422, "", "Percentage must be a numeric value between 0 and 100", "SubtractPercentage"
        )
    paid_fiat = (crypto_paid * rate).quantize(Decimal(1).scaleb(-places))
    if variant in ("RateThen", "CurrentRate"):
        # the simulated rate never moves: now is then
        terms = Terms("BTC", str(crypto_paid.quantize(BTC_PLACES)), True, methods)
    elif variant == "Fiat":
        terms = Terms(currency, str(paid_fiat), False, methods)
    elif variant == "OverpaidAmount":
        # the simulated buyer never pays more than asked (``PaidOver`` never happens)
        raise GreenfieldError(422, "", "Invoice is not overpaid", "RefundVariant")
    elif variant == "Custom":
        amount = _decimal(body.get("customAmount"))
        custom = body.get("customCurrency")
        if amount is None or amount <= 0:
            raise GreenfieldError(422, "", "Amount must be greater than 0", "CustomAmount")
        if custom != "BTC" and custom not in EXPONENTS:
            raise GreenfieldError(422, "", "Invalid currency", "CustomCurrency")
        terms = Terms(str(custom), str(body["customAmount"]), custom == "BTC", methods)
    else:
        raise GreenfieldError(422, "", "Please select a valid refund option", "RefundVariant")
    if subtract > 0:
        amount = Decimal(terms.amount)
        divisible = BTC_PLACES if terms.currency == "BTC" else Decimal(1).scaleb(-places)
        reduced = (amount - amount * subtract / 100).quantize(divisible)
        terms = Terms(terms.currency, str(reduced), terms.auto_approve, methods)
    return terms


def _payout_methods(body: dict[str, Any], array: bool) -> list[str]:
    """The payout methods asked for (RefundInvoice's ``requestedPayoutMethods``): the
    ``payoutMethods`` array where the server reads it, else ``payoutMethodId``, else the
    invoice's default payment method (on chain here); unsupported ones refused as BTCPay does
    (422 on the field asked with)."""
    listed = body.get("payoutMethods") if array else None
    if isinstance(listed, list):
        key, asked = "PayoutMethods", [str(m) for m in listed]
        for method in asked:
            if method not in PAYOUT_METHODS:
                raise GreenfieldError(
                    422, "", f"Invalid or unsupported payout method: {method}", key
                )
    elif body.get("payoutMethodId") is not None:
        key, asked = "PayoutMethodId", [str(body["payoutMethodId"])]
    else:
        key, asked = "PayoutMethodId", ["BTC-CHAIN"]
    methods = list(dict.fromkeys(m for m in asked if m in PAYOUT_METHODS))
    if not methods:
        raise GreenfieldError(
            422,
            "",
            "Please select one of the payment methods which were available for the original"
            " invoice",
            key,
        )
    return methods


def _decimal(value: Any) -> Decimal | None:
    try:
        number = Decimal(str(value))
    except ArithmeticError:
        return None
    return number if number.is_finite() else None
