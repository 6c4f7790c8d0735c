"""The contracts of every raw record and of binding.json, run.json and numbers.json, one module per document
(numbers.json's by section), each read and written by the rule of `check`. Every name is imported from here:
`from core.records import Numbers`."""
from .binding import Binding, BindingScope, ChainHead, ScopeChange
from .bundle import BundleFile, BundleInfo
from .check import Document, Entry
from .comparisons import (
    Calibration,
    Comparison,
    ComparisonFamily,
    CorrectedPower,
    Estimate,
    FamilyTest,
    JudgeError,
    JudgeEstimate,
    Lift,
    Result,
    SelfPreference,
    Stratum,
    Style,
)
from .gold import (
    ArmOffset,
    GoldAgreement,
    GoldDesigns,
    GoldDraw,
    GoldPair,
    GoldSummary,
    JudgeAgainstGold,
    JudgeValidity,
    Offset,
)
from .judges import (
    Agreement,
    AgreementPair,
    DecisionChanged,
    JudgesSection,
    JudgeTotal,
    LengthBias,
    LengthRow,
    PairwiseRow,
    RetestRow,
    RetestSection,
)
from .numbers import (
    Amendment,
    Cell,
    CleanComparison,
    ContaminationSection,
    FamilySection,
    FamilyStep,
    Numbers,
    QuantCheck,
    Subset,
)
from .raw import (
    ANSWER_KEY,
    JUDGMENT_KEY,
    RETEST_KEY,
    AnswerRow,
    GoldLabel,
    HumanLabel,
    Judgment,
    KeyRow,
    LabelSample,
    PairKey,
    PublicQuestion,
    Record,
    Retest,
    blinding_key,
    judgment_kind,
    row_id,
)
from .run import BackendIdentity, CostRow, RunAnalysis, RunInfo, RunJudge, RunRuntime
from .run_comparisons import RunComparison
from .stability import Stability, StabilityCell, StabilityEstimate

# in the order the contracts were declared: docs/gen_reference.py lists the documents in it
__all__ = [
    "ANSWER_KEY", "JUDGMENT_KEY", "RETEST_KEY", "row_id", "Record", "AnswerRow", "KeyRow", "PairKey", "blinding_key",
    "judgment_kind", "Judgment", "Retest", "HumanLabel", "GoldLabel", "LabelSample", "PublicQuestion", "Entry",
    "Document", "BackendIdentity", "RunJudge", "CostRow", "RunRuntime", "RunAnalysis", "RunInfo", "Result", "Cell",
    "Subset", "Calibration", "RunComparison",
    "FamilyTest", "ComparisonFamily", "FamilyStep", "FamilySection", "Stratum", "Estimate", "CorrectedPower",
    "JudgeError", "JudgeEstimate", "Lift", "SelfPreference", "Style", "QuantCheck", "JudgeTotal", "Amendment",
    "LengthRow", "LengthBias", "PairwiseRow", "AgreementPair", "Agreement", "RetestRow", "DecisionChanged",
    "RetestSection", "Offset", "ArmOffset", "GoldAgreement", "GoldPair", "GoldDesigns",
    "JudgeAgainstGold", "GoldDraw", "GoldSummary", "JudgeValidity", "JudgesSection", "Comparison", "CleanComparison",
    "ContaminationSection", "StabilityEstimate", "StabilityCell", "Stability", "Numbers",
    "BindingScope", "ChainHead", "ScopeChange", "Binding", "BundleFile", "BundleInfo",
]
